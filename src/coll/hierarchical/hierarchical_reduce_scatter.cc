#include <numeric>

#include "coll/algorithms.h"
#include "coll/hierarchical/hierarchical.h"
#include "coll/hierarchical/host_order.h"
#include "coll/hierarchical/leader_transfers.h"
#include "coll/scratch.h"

namespace weft::coll {

namespace {

std::vector<std::size_t> times(std::span<const std::size_t> counts, std::size_t element) {
  std::vector<std::size_t> bytes(counts.begin(), counts.end());
  for (std::size_t& b : bytes) b *= element;
  return bytes;
}

}  // namespace

void hierarchical_reduce_scatter(CollectiveCall& call, const void* input, void* output,
                                 std::span<const std::size_t> counts, DType dtype, ReduceOp op) {
  const core::HostLayout& layout = call.communicator().host_layout();
  core::HostGroups& groups = call.communicator().host_groups();
  const int my_host = layout.host_of[call.rank()];
  const bool leader = groups.leaders != nullptr;
  const std::size_t element = size_of(dtype);
  const std::vector<std::size_t> byte_counts = times(counts, element);
  const std::vector<std::size_t> host_counts = host_totals(layout, counts);  // elements
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});

  // The reduction to the leader runs on the blocks in host order, so that each host's blocks
  // form the one block the leaders' reduce_scatter gives it. The leader reduces into a copy
  // (the caller's input is read-only); the others' data stays untouched by the shm reduce, so
  // they pass the caller's input itself when no reordering is needed.
  Scratch by_host;
  void* contribution = const_cast<void*>(input);
  if (leader || !host_order_is_rank_order(layout)) {
    by_host = Scratch(total * element);
    to_host_order(layout, byte_counts, static_cast<const uint8_t*>(input), by_host.data());
    contribution = by_host.data();
  }
  CollectiveCall on_host = call.on(*groups.local);
  run_reduce(Algorithm::kShm, on_host, contribution, total, dtype, op, /*root=*/0);

  Scratch host_part(leader ? host_counts[my_host] * element : 0);
  if (leader) {
    CollectiveCall across = call.on(*groups.leaders);
    run_reduce_scatter(leaders_algorithm(across, core::OpKind::kReduceScatter, total * element),
                       across, by_host.data(), host_part.data(), host_counts, dtype, op);
  }
  CollectiveCall spread_on_host = call.on(*groups.local);
  scatter_from_leader(spread_on_host, host_part.data(), output,
                      member_counts(layout, my_host, byte_counts));
}

}  // namespace weft::coll
