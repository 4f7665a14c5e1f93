#include "coll/hierarchical/leader_transfers.h"

#include "coll/algorithms.h"
#include "coll/hierarchical/host_order.h"
#include "coll/member_list.h"

namespace weft::coll {

namespace {

constexpr int kLeader = 0;

}  // namespace

Algorithm leaders_algorithm(CollectiveCall& across, core::OpKind collective, std::size_t bytes,
                            bool equal_blocks) {
  return choose_without_shared_memory(
      SelectionInput{.collective = collective,
                     .bytes = bytes,
                     .group_size = across.size(),
                     .equal_blocks = equal_blocks,
                     .network = &across.communicator().network_settings()});
}

void gather_to_leader(CollectiveCall& on_host, const void* input, void* output,
                      std::span<const std::size_t> byte_counts) {
  const int members = on_host.size();
  const bool leader = on_host.rank() == kLeader;
  MemberList<std::size_t> send_bytes(members, 0), send_offsets(members, 0);
  send_bytes[kLeader] = byte_counts[on_host.rank()];
  MemberList<std::size_t> recv_bytes(members, 0), recv_offsets(members, 0);
  if (leader) {
    std::vector<std::size_t> offsets = offsets_of(byte_counts);
    for (int m = 0; m < members; ++m) {
      recv_bytes[m] = byte_counts[m];
      recv_offsets[m] = offsets[m];
    }
  }
  run_all_to_all(Algorithm::kShm, on_host, input, send_bytes, send_offsets, output, recv_bytes,
                 recv_offsets);
}

void scatter_from_leader(CollectiveCall& on_host, const void* input, void* output,
                         std::span<const std::size_t> byte_counts) {
  const int members = on_host.size();
  const bool leader = on_host.rank() == kLeader;
  MemberList<std::size_t> send_bytes(members, 0), send_offsets(members, 0);
  if (leader) {
    std::vector<std::size_t> offsets = offsets_of(byte_counts);
    for (int m = 0; m < members; ++m) {
      send_bytes[m] = byte_counts[m];
      send_offsets[m] = offsets[m];
    }
  }
  MemberList<std::size_t> recv_bytes(members, 0), recv_offsets(members, 0);
  recv_bytes[kLeader] = byte_counts[on_host.rank()];
  run_all_to_all(Algorithm::kShm, on_host, input, send_bytes, send_offsets, output, recv_bytes,
                 recv_offsets);
}

}  // namespace weft::coll
