#include <algorithm>
#include <cstring>
#include <vector>

#include "coll/algorithms.h"
#include "coll/hierarchical/hierarchical.h"
#include "coll/hierarchical/leader_transfers.h"
#include "coll/scratch.h"

namespace weft::coll {

void hierarchical_all_gather(CollectiveCall& call, const void* input, void* output,
                             std::span<const std::size_t> byte_counts) {
  const core::HostLayout& layout = call.communicator().host_layout();
  core::HostGroups& groups = call.communicator().host_groups();
  const int hosts = layout.hosts();
  const int my_host = layout.host_of[call.rank()];
  // The gathered blocks in host order (each host's members contiguous), then rank order.
  std::vector<std::size_t> host_bytes(hosts, 0), host_offsets(hosts, 0);
  for (int h = 0; h < hosts; ++h) {
    for (int member : layout.members[h]) host_bytes[h] += byte_counts[member];
    if (h > 0) host_offsets[h] = host_offsets[h - 1] + host_bytes[h - 1];
  }
  const std::size_t total = host_offsets[hosts - 1] + host_bytes[hosts - 1];
  Scratch by_host(total);

  std::vector<std::size_t> local_counts;
  for (int member : layout.members[my_host]) local_counts.push_back(byte_counts[member]);
  CollectiveCall on_host = call.on(*groups.local);
  run_all_gather(Algorithm::kShm, on_host, input, by_host.data() + host_offsets[my_host],
                 local_counts);
  if (groups.leaders) {
    bool equal = std::all_of(host_bytes.begin(), host_bytes.end(),
                             [&](std::size_t b) { return b == host_bytes[0]; });
    CollectiveCall across = call.on(*groups.leaders);
    run_all_gather(leaders_algorithm(across, core::OpKind::kAllGather, total, equal), across,
                   by_host.data() + host_offsets[my_host], by_host.data(), host_bytes);
  }
  CollectiveCall spread_on_host = call.on(*groups.local);
  run_broadcast(Algorithm::kShm, spread_on_host, by_host.data(), total, /*root=*/0);

  std::vector<std::size_t> rank_offsets(byte_counts.size(), 0);
  for (std::size_t r = 1; r < byte_counts.size(); ++r) {
    rank_offsets[r] = rank_offsets[r - 1] + byte_counts[r - 1];
  }
  auto* out = static_cast<uint8_t*>(output);
  std::size_t position = 0;
  for (int h = 0; h < hosts; ++h) {
    for (int member : layout.members[h]) {
      if (byte_counts[member]) {
        std::memcpy(out + rank_offsets[member], by_host.data() + position, byte_counts[member]);
      }
      position += byte_counts[member];
    }
  }
}

}  // namespace weft::coll
