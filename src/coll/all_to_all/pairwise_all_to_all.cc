#include "coll/all_to_all/pairwise_all_to_all.h"

#include <cstring>
#include <string>

#include "weft/error.h"

namespace weft::coll {

namespace {
// Up to this many bytes sent per rank, all exchanges are posted at once.
constexpr std::size_t kPostAllBytes = 1u << 20;
}  // namespace

void pairwise_all_to_all(CollectiveCall& call, const void* input,
                         std::span<const std::size_t> send_bytes,
                         std::span<const std::size_t> send_offsets, void* output,
                         std::span<const std::size_t> recv_bytes,
                         std::span<const std::size_t> recv_offsets) {
  const int p = call.size(), rank = call.rank();
  const auto n = static_cast<std::size_t>(p);
  if (send_bytes.size() != n || send_offsets.size() != n || recv_bytes.size() != n ||
      recv_offsets.size() != n) {
    throw Error(ErrorCode::kInternal,
                "pairwise_all_to_all: split vectors must have " + std::to_string(p) + " entries");
  }
  if (send_bytes[rank] != recv_bytes[rank]) {
    throw Error(ErrorCode::kInternal, "pairwise_all_to_all: rank " + std::to_string(rank) +
                                          " sends itself " + std::to_string(send_bytes[rank]) +
                                          " bytes but expects " + std::to_string(recv_bytes[rank]));
  }
  const auto* in = static_cast<const unsigned char*>(input);
  auto* out = static_cast<unsigned char*>(output);
  // Our own block is copied once the first exchanges are posted: while they are on their way.
  auto copy_own_block = [&](const std::vector<CollectiveCall::RequestPtr>& in_flight) {
    if (send_bytes[rank] > 0) {
      call.copy_while_in_flight(out + recv_offsets[rank], in + send_offsets[rank], send_bytes[rank],
                                in_flight);
    }
  };
  std::size_t total = 0;
  for (std::size_t bytes : send_bytes) total += bytes;
  if (total <= kPostAllBytes) {
    // Small blocks: every exchange in flight at once, so the p - 1 latencies overlap.
    std::vector<CollectiveCall::RequestPtr> requests;
    for (int k = 1; k < p; ++k) {
      const int from = (rank - k + p) % p;
      if (recv_bytes[from] > 0) {
        requests.push_back(
            call.irecv(from, static_cast<uint32_t>(k), out + recv_offsets[from], recv_bytes[from]));
      }
    }
    for (int k = 1; k < p; ++k) {
      const int to = (rank + k) % p;
      if (send_bytes[to] > 0) {
        requests.push_back(
            call.isend(to, static_cast<uint32_t>(k), in + send_offsets[to], send_bytes[to]));
      }
    }
    copy_own_block(requests);
    call.wait_all(requests);
    return;
  }
  if (p == 1) copy_own_block({});
  for (int k = 1; k < p; ++k) {
    const int to = (rank + k) % p, from = (rank - k + p) % p;
    if (k == 1) {
      std::vector<CollectiveCall::RequestPtr> step;
      if (recv_bytes[from] > 0) {
        step.push_back(call.irecv(from, 1, out + recv_offsets[from], recv_bytes[from]));
      }
      if (send_bytes[to] > 0) {
        step.push_back(call.isend(to, 1, in + send_offsets[to], send_bytes[to]));
      }
      copy_own_block(step);
      call.wait_all(step);
      continue;
    }
    if (send_bytes[to] == 0 && recv_bytes[from] == 0) continue;
    call.send_recv(send_bytes[to] > 0 ? to : -1, static_cast<uint32_t>(k), in + send_offsets[to],
                   send_bytes[to], recv_bytes[from] > 0 ? from : -1, out + recv_offsets[from],
                   recv_bytes[from]);
  }
}

}  // namespace weft::coll
