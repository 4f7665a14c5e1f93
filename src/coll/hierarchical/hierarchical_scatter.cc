#include <algorithm>
#include <numeric>

#include "coll/algorithms.h"
#include "coll/hierarchical/hierarchical.h"
#include "coll/hierarchical/host_order.h"
#include "coll/hierarchical/leader_transfers.h"
#include "coll/scratch.h"

namespace weft::coll {

void hierarchical_scatter(CollectiveCall& call, const void* input, void* output,
                          std::span<const std::size_t> byte_counts, int root) {
  const core::HostLayout& layout = call.communicator().host_layout();
  core::HostGroups& groups = call.communicator().host_groups();
  const int my_host = layout.host_of[call.rank()];
  const int root_host = layout.host_of[root];
  const bool leader = groups.leaders != nullptr;
  const bool deals_all = leader && my_host == root_host;
  const bool is_root = call.rank() == root;
  const std::vector<std::size_t> host_bytes = host_totals(layout, byte_counts);
  const std::size_t total = std::accumulate(host_bytes.begin(), host_bytes.end(), std::size_t{0});

  // The root host's leader deals the whole buffer in host order; the root hands it over
  // (one message within the host) when it is not that leader.
  Scratch by_host(deals_all || is_root ? total : 0);
  if (is_root) {
    to_host_order(layout, byte_counts, static_cast<const uint8_t*>(input), by_host.data());
  }
  const auto& root_members = layout.members[root_host];
  if (my_host == root_host && root_members.front() != root) {
    // Every member of the root's host takes the sub-call, so that their sequence numbers stay
    // aligned; only the root and the leader use it.
    CollectiveCall handoff = call.on(*groups.local);
    const int local_root = static_cast<int>(
        std::find(root_members.begin(), root_members.end(), root) - root_members.begin());
    if (is_root) handoff.send(0, 0, by_host.data(), total);
    if (leader) handoff.recv(local_root, 0, by_host.data(), total);
  }

  Scratch host_part(leader ? host_bytes[my_host] : 0);
  if (leader) {
    CollectiveCall across = call.on(*groups.leaders);
    run_scatter(leaders_algorithm(across, core::OpKind::kScatter, total), across, by_host.data(),
                host_part.data(), host_bytes, root_host);  // leaders rank by host
  }
  CollectiveCall on_host = call.on(*groups.local);
  scatter_from_leader(on_host, host_part.data(), output,
                      member_counts(layout, my_host, byte_counts));
}

}  // namespace weft::coll
