#include <algorithm>

#include "coll/algorithms.h"
#include "coll/hierarchical/hierarchical.h"
#include "coll/hierarchical/leader_transfers.h"

namespace weft::coll {

void hierarchical_broadcast(CollectiveCall& call, void* data, std::size_t bytes, int root) {
  const core::HostLayout& layout = call.communicator().host_layout();
  core::HostGroups& groups = call.communicator().host_groups();
  const int root_host = layout.host_of[root];
  const bool on_root_host = layout.host_of[call.rank()] == root_host;
  if (on_root_host) {
    const auto& members = layout.members[root_host];
    int local_root =
        static_cast<int>(std::find(members.begin(), members.end(), root) - members.begin());
    CollectiveCall from_root = call.on(*groups.local);
    run_broadcast(Algorithm::kShm, from_root, data, bytes, local_root);
  }
  if (groups.leaders) {
    CollectiveCall across = call.on(*groups.leaders);
    run_broadcast(leaders_algorithm(across, core::OpKind::kBroadcast, bytes), across, data, bytes,
                  root_host);  // leaders rank by host
  }
  if (!on_root_host) {
    CollectiveCall from_leader = call.on(*groups.local);
    run_broadcast(Algorithm::kShm, from_leader, data, bytes, /*root=*/0);
  }
}

}  // namespace weft::coll
