// Blocks of a group spread over hosts, in rank order and in host order: host order lists each
// host's members together (hosts, then members, as core::HostLayout numbers them), which is how
// the hierarchical algorithms move them (a host's blocks are then one range for its leader).
// Pure functions of the layout and the sizes. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/communicator.h"

namespace weft::coll {

// Whether host order is rank order (every host's members have consecutive ranks).
bool host_order_is_rank_order(const core::HostLayout& layout);

// Bytes of each host's blocks together (byte_counts has one entry per group rank).
std::vector<std::size_t> host_totals(const core::HostLayout& layout,
                                     std::span<const std::size_t> byte_counts);

// The byte counts of one host's members, in its member order.
std::vector<std::size_t> member_counts(const core::HostLayout& layout, int host,
                                       std::span<const std::size_t> byte_counts);

// Where each of `sizes` starts when they lie one after the other.
std::vector<std::size_t> offsets_of(std::span<const std::size_t> sizes);

// Copies the blocks (byte_counts per group rank) from rank order in `from` to host order in
// `to`, and back. The buffers must not overlap.
void to_host_order(const core::HostLayout& layout, std::span<const std::size_t> byte_counts,
                   const uint8_t* from, uint8_t* to);
void to_rank_order(const core::HostLayout& layout, std::span<const std::size_t> byte_counts,
                   const uint8_t* from, uint8_t* to);

}  // namespace weft::coll
