#include "coll/algorithms.h"
#include "coll/hierarchical/hierarchical.h"
#include "coll/hierarchical/leader_transfers.h"

namespace weft::coll {

// A leader enters the leaders' barrier only once its whole host has arrived, and its host
// leaves only once the leader is out of it: then nobody leaves before everybody arrived.
void hierarchical_barrier(CollectiveCall& call) {
  core::HostGroups& groups = call.communicator().host_groups();
  CollectiveCall arrive_on_host = call.on(*groups.local);
  run_barrier(Algorithm::kShm, arrive_on_host);
  if (groups.leaders) {
    CollectiveCall across = call.on(*groups.leaders);
    run_barrier(leaders_algorithm(across, core::OpKind::kBarrier, 0), across);
  }
  CollectiveCall leave_on_host = call.on(*groups.local);
  run_barrier(Algorithm::kShm, leave_on_host);
}

}  // namespace weft::coll
