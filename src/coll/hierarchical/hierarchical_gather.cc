#include <algorithm>
#include <numeric>

#include "coll/algorithms.h"
#include "coll/hierarchical/hierarchical.h"
#include "coll/hierarchical/host_order.h"
#include "coll/hierarchical/leader_transfers.h"
#include "coll/scratch.h"

namespace weft::coll {

void hierarchical_gather(CollectiveCall& call, const void* input, void* output,
                         std::span<const std::size_t> byte_counts, int root) {
  const core::HostLayout& layout = call.communicator().host_layout();
  core::HostGroups& groups = call.communicator().host_groups();
  const int my_host = layout.host_of[call.rank()];
  const int root_host = layout.host_of[root];
  const bool leader = groups.leaders != nullptr;
  const bool collects_all = leader && my_host == root_host;
  const std::vector<std::size_t> host_bytes = host_totals(layout, byte_counts);
  const std::vector<std::size_t> host_offsets = offsets_of(host_bytes);
  const std::size_t total = std::accumulate(host_bytes.begin(), host_bytes.end(), std::size_t{0});

  // The root host's leader gathers its host's blocks straight into their place in the whole
  // host-ordered buffer (the leaders' gather takes its own block in place there).
  Scratch by_host(collects_all ? total : 0);
  Scratch host_part(leader && !collects_all ? host_bytes[my_host] : 0);
  uint8_t* mine = collects_all ? by_host.data() + host_offsets[my_host] : host_part.data();
  CollectiveCall on_host = call.on(*groups.local);
  gather_to_leader(on_host, input, mine, member_counts(layout, my_host, byte_counts));
  if (leader) {
    CollectiveCall across = call.on(*groups.leaders);
    run_gather(leaders_algorithm(across, core::OpKind::kGather, total), across, mine,
               by_host.data(), host_bytes, root_host);  // leaders rank by host
  }
  if (my_host != root_host) return;

  const auto& members = layout.members[root_host];
  if (members.front() == root) {  // the leader is the root
    if (leader) to_rank_order(layout, byte_counts, by_host.data(), static_cast<uint8_t*>(output));
    return;
  }
  // Every member of the root's host takes the sub-call, so that their sequence numbers stay
  // aligned; only the leader and the root use it.
  CollectiveCall handoff = call.on(*groups.local);
  const int local_root =
      static_cast<int>(std::find(members.begin(), members.end(), root) - members.begin());
  if (leader) {
    Scratch by_rank(total);
    to_rank_order(layout, byte_counts, by_host.data(), by_rank.data());
    handoff.send(local_root, 0, by_rank.data(), total);
  }
  if (call.rank() == root) handoff.recv(0, 0, output, total);
}

}  // namespace weft::coll
