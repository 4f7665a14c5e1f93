#include "coll/hierarchical/host_order.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace weft::coll {

namespace {

// Copies each block between its rank-order and its host-order place, in the direction asked.
void copy_blocks(const core::HostLayout& layout, std::span<const std::size_t> byte_counts,
                 const uint8_t* from, uint8_t* to, bool into_host_order) {
  const std::vector<std::size_t> rank_offsets = offsets_of(byte_counts);
  std::size_t host_position = 0;
  for (const auto& members : layout.members) {
    for (int member : members) {
      const std::size_t bytes = byte_counts[member];
      if (bytes) {
        if (into_host_order) {
          std::memcpy(to + host_position, from + rank_offsets[member], bytes);
        } else {
          std::memcpy(to + rank_offsets[member], from + host_position, bytes);
        }
      }
      host_position += bytes;
    }
  }
}

}  // namespace

bool host_order_is_rank_order(const core::HostLayout& layout) {
  return std::is_sorted(layout.host_of.begin(), layout.host_of.end());
}

std::vector<std::size_t> host_totals(const core::HostLayout& layout,
                                     std::span<const std::size_t> byte_counts) {
  std::vector<std::size_t> totals(layout.hosts(), 0);
  for (int h = 0; h < layout.hosts(); ++h) {
    for (int member : layout.members[h]) totals[h] += byte_counts[member];
  }
  return totals;
}

std::vector<std::size_t> member_counts(const core::HostLayout& layout, int host,
                                       std::span<const std::size_t> byte_counts) {
  std::vector<std::size_t> counts;
  counts.reserve(layout.members[host].size());
  for (int member : layout.members[host]) counts.push_back(byte_counts[member]);
  return counts;
}

std::vector<std::size_t> offsets_of(std::span<const std::size_t> sizes) {
  std::vector<std::size_t> offsets(sizes.size(), 0);
  std::exclusive_scan(sizes.begin(), sizes.end(), offsets.begin(), std::size_t{0});
  return offsets;
}

void to_host_order(const core::HostLayout& layout, std::span<const std::size_t> byte_counts,
                   const uint8_t* from, uint8_t* to) {
  copy_blocks(layout, byte_counts, from, to, /*into_host_order=*/true);
}

void to_rank_order(const core::HostLayout& layout, std::span<const std::size_t> byte_counts,
                   const uint8_t* from, uint8_t* to) {
  copy_blocks(layout, byte_counts, from, to, /*into_host_order=*/false);
}

}  // namespace weft::coll
