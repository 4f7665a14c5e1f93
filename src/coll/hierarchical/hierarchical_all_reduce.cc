#include "coll/algorithms.h"
#include "coll/hierarchical/hierarchical.h"
#include "coll/hierarchical/leader_transfers.h"

namespace weft::coll {

void hierarchical_all_reduce(CollectiveCall& call, void* data, std::size_t count, DType dtype,
                             ReduceOp op) {
  core::HostGroups& groups = call.communicator().host_groups();
  const std::size_t bytes = count * size_of(dtype);
  CollectiveCall gather_on_host = call.on(*groups.local);
  run_reduce(Algorithm::kShm, gather_on_host, data, count, dtype, op, /*root=*/0);
  if (groups.leaders) {
    CollectiveCall across = call.on(*groups.leaders);
    run_all_reduce(leaders_algorithm(across, core::OpKind::kAllReduce, bytes), across, data, data,
                   count, dtype, op);
  }
  CollectiveCall spread_on_host = call.on(*groups.local);
  run_broadcast(Algorithm::kShm, spread_on_host, data, bytes, /*root=*/0);
}

}  // namespace weft::coll
