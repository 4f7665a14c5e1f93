// RankPlacement — which hosts of a --hosts/--hostfile list run ranks, and how many each.
//
// Like mpirun's default mapping (by slot), ranks fill the hosts in the order listed, each up to
// its slots: -np 4 over a:2,b:2,c:2 runs ranks 0-1 on a and 2-3 on b, and c stays idle.
//   nothing given       every slot of every host runs a rank
//   -np N               N ranks, by slot. More ranks than slots is an error, unless
//                       oversubscribe: then the N ranks are spread evenly over every host
//   -n K                K ranks on every host (K above a host's slots needs oversubscribe)
//   -np N and -n K      N / K hosts, the first ones listed, K ranks each
// NOTE(weftrun-uneven-hosts): every host that runs ranks runs the same number, because a job's
// node agents share one --nproc-per-node (node_rendezvous.h, rank_environment.h). A mapping
// that would put different numbers on different hosts is refused with the numbers it would
// have used, rather than silently changed.
//
// Contract: a pure function; an impossible request throws std::invalid_argument with one line
// fit to print after "weftrun: " that names the numbers.
#pragma once

#include <string>
#include <vector>

#include "host_list.h"

namespace weft::run {

struct PlacementRequest {
  int total_ranks = 0;  // -np; 0 when not given
  int per_host = 0;     // -n / --nproc-per-node; 0 when not given
  bool oversubscribe = false;
};

struct Placement {
  std::vector<std::string> hosts;  // the hosts that run ranks, node 0 first
  int ranks_per_host = 0;
};

Placement place_ranks(const std::vector<HostSlots>& hosts, const PlacementRequest& request);

}  // namespace weft::run
