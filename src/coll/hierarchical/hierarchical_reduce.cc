#include <algorithm>
#include <cstring>
#include <vector>

#include "coll/algorithms.h"
#include "coll/hierarchical/hierarchical.h"
#include "coll/hierarchical/leader_transfers.h"

namespace weft::coll {

void hierarchical_reduce(CollectiveCall& call, void* data, std::size_t count, DType dtype,
                         ReduceOp op, int root) {
  const core::HostLayout& layout = call.communicator().host_layout();
  core::HostGroups& groups = call.communicator().host_groups();
  const std::size_t bytes = count * size_of(dtype);
  const int root_host = layout.host_of[root];
  const bool leader = groups.leaders != nullptr;
  const bool is_root = call.rank() == root;
  // A leader that is not the root reduces into scratch: its own data must stay as it was.
  std::vector<uint8_t> scratch;
  void* partial = data;
  if (leader && !is_root) {
    scratch.assign(static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + bytes);
    partial = scratch.data();
  }
  CollectiveCall on_host = call.on(*groups.local);
  run_reduce(Algorithm::kShm, on_host, partial, count, dtype, op, /*root=*/0);
  if (leader) {
    CollectiveCall across = call.on(*groups.leaders);
    run_reduce(leaders_algorithm(across, core::OpKind::kReduce, bytes), across, partial, count,
               dtype, op, root_host);
  }
  if (layout.host_of[call.rank()] != root_host) return;
  const auto& members = layout.members[root_host];
  if (members.front() == root) return;  // the leader is the root: done
  // Every member of the root's host takes the sub-call, so that their sequence numbers stay
  // aligned; only the leader and the root use it.
  CollectiveCall handoff = call.on(*groups.local);
  int local_root =
      static_cast<int>(std::find(members.begin(), members.end(), root) - members.begin());
  if (leader) handoff.send(local_root, 0, partial, bytes);
  if (is_root) handoff.recv(0, 0, data, bytes);
}

}  // namespace weft::coll
