// The moves between a host's members and its leader that coll/shm has no collective for, and
// the leaders' choice of algorithm: what the hierarchical algorithms share.
//
// A gather to the leader and a scatter from it run as all_to_all calls over the host group's
// shared-memory window (shm_all_to_all) in which only the leader receives, or only the leader
// sends: one copy in and one out through the slots, or one read straight from the sender's
// memory for large blocks, where a tree of point-to-point messages would take a round per
// level. Not thread-safe: runs on the call's thread.
#pragma once

#include <cstddef>
#include <span>

#include "coll/collective_call.h"
#include "coll/selector.h"
#include "core/op_signature.h"

namespace weft::coll {

// The algorithm the leaders' group runs `collective` with (`bytes` as the selector sees them
// for it): the selector's choice for one rank per host, without shared memory.
Algorithm leaders_algorithm(CollectiveCall& across, core::OpKind collective, std::size_t bytes,
                            bool equal_blocks = true);

// On a host group (`on_host`, whose rank 0 is the leader): member m's `byte_counts[m]` bytes at
// `input` end up one after the other, in member order, at the leader's `output` (unused
// elsewhere; may be null).
void gather_to_leader(CollectiveCall& on_host, const void* input, void* output,
                      std::span<const std::size_t> byte_counts);

// The reverse: the leader's `input` holds the members' blocks in member order; member m
// receives its `byte_counts[m]` bytes into `output`. `input` is read only on the leader.
void scatter_from_leader(CollectiveCall& on_host, const void* input, void* output,
                         std::span<const std::size_t> byte_counts);

}  // namespace weft::coll
