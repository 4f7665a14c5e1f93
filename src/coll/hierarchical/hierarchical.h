// Hierarchical collectives for a group spread over several hosts, some with several members:
// within each host over shared memory (coll/shm), across hosts between one leader per host
// (the host's lowest group rank) with the algorithm the selector picks for the leaders' group,
// then within each host again. Cross-host traffic is one message stream per host instead of
// one per rank.
//
// Phases (h hosts, the group split by core::Communicator::host_groups()):
// - all_reduce: reduce to the leader on each host; all_reduce among leaders; broadcast from the
//   leader on each host.
// - broadcast: on the root's host, broadcast from the root; among leaders, broadcast from the
//   root host's leader; on every other host, broadcast from the leader.
// - reduce: reduce to the leader on each host (into scratch: non-roots' data stays as it was);
//   reduce among leaders to the root host's leader; that leader hands the result to the root
//   (one message within the host) when it is not the root itself.
// - all_gather: all_gather within each host into the host's part of a host-ordered scratch;
//   all_gather (uneven: hosts differ in size) of the hosts' parts among leaders; broadcast of
//   the whole scratch on each host; every member then reorders it into rank order.
// - reduce_scatter: every member puts its blocks in host order; reduce of the whole buffer to
//   the leader on each host; reduce_scatter among leaders, each host's blocks one block;
//   scatter of the host's block from the leader on each host.
// - all_to_all: gather of every member's blocks (in the order of their destinations' hosts)
//   to the leader on each host; one all_to_all among leaders, a message per pair of hosts;
//   scatter from the leader on each host of each member's blocks, in source rank order. With
//   split sizes, the leader first gathers its members' sizes (sent and expected), and every
//   leaders' message carries the sizes of its blocks for the receiver to check.
// - gather: gather to the leader on each host; gather among leaders to the root host's leader;
//   that leader puts the blocks in rank order and hands them to the root (one message within
//   the host) when it is not the root itself.
// - scatter: the root puts its blocks in host order and hands them to its host's leader when it
//   is not that leader; scatter among leaders from it; scatter from the leader on each host.
// - barrier: barrier on each host; among leaders; on each host again.
// Gathers to and scatters from a leader are all_to_all calls over the host's window in which
// only the leader receives or sends (leader_transfers.h).
// Sub-calls run as CollectiveCalls of the host groups (same signature and deadline), so every
// failure is named as usual and fails this group, its host groups and every member.
// Not thread-safe: runs on the call's thread.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "coll/collective_call.h"
#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft::coll {

void hierarchical_all_reduce(CollectiveCall& call, void* data, std::size_t count, DType dtype,
                             ReduceOp op);
void hierarchical_broadcast(CollectiveCall& call, void* data, std::size_t bytes, int root);
void hierarchical_reduce(CollectiveCall& call, void* data, std::size_t count, DType dtype,
                         ReduceOp op, int root);
void hierarchical_all_gather(CollectiveCall& call, const void* input, void* output,
                             std::span<const std::size_t> byte_counts);
void hierarchical_reduce_scatter(CollectiveCall& call, const void* input, void* output,
                                 std::span<const std::size_t> counts, DType dtype, ReduceOp op);
void hierarchical_all_to_all(CollectiveCall& call, const void* input,
                             std::span<const std::size_t> send_bytes,
                             std::span<const std::size_t> send_offsets, void* output,
                             std::span<const std::size_t> recv_bytes,
                             std::span<const std::size_t> recv_offsets);
// The same with `block` bytes to each member, in rank order without gaps: no sizes to gather.
void hierarchical_even_all_to_all(CollectiveCall& call, const void* input, void* output,
                                  std::size_t block);
void hierarchical_gather(CollectiveCall& call, const void* input, void* output,
                         std::span<const std::size_t> byte_counts, int root);
void hierarchical_scatter(CollectiveCall& call, const void* input, void* output,
                          std::span<const std::size_t> byte_counts, int root);
void hierarchical_barrier(CollectiveCall& call);

}  // namespace weft::coll
