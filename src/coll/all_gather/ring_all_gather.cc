#include "coll/all_gather/ring_all_gather.h"

#include <cstring>
#include <string>

#include "weft/error.h"

namespace weft::coll {

void ring_all_gather(CollectiveCall& call, const void* input, void* output,
                     std::span<const std::size_t> byte_counts) {
  const int p = call.size(), rank = call.rank();
  if (byte_counts.size() != static_cast<std::size_t>(p)) {
    throw Error(ErrorCode::kInternal, "ring_all_gather: " + std::to_string(byte_counts.size()) +
                                          " byte counts for " + std::to_string(p) + " ranks");
  }
  std::vector<std::size_t> offsets(p + 1, 0);
  for (int r = 0; r < p; ++r) offsets[r + 1] = offsets[r] + byte_counts[r];
  auto* out = static_cast<unsigned char*>(output);

  const bool in_place = input == out + offsets[rank];
  const int right = (rank + 1) % p, left = (rank + p - 1) % p;
  // The first step sends our block from the input, so that copying it into the output runs
  // while the block is on its way instead of before.
  const std::size_t first_recv_bytes = p > 1 ? byte_counts[left] : 0;
  std::vector<core::RequestPtr> first;
  if (first_recv_bytes > 0) {
    first.push_back(call.irecv(left, 0, out + offsets[left], first_recv_bytes));
  }
  if (p > 1 && byte_counts[rank] > 0) {
    first.push_back(call.isend(right, 0, input, byte_counts[rank]));
  }
  if (!in_place && byte_counts[rank] > 0) {
    call.copy_while_in_flight(out + offsets[rank], input, byte_counts[rank], first);
  }
  call.wait_all(first);
  for (int k = 1; k < p - 1; ++k) {
    const int send_block = (rank - k + p) % p;
    const int recv_block = (rank - k - 1 + 2 * p) % p;
    const std::size_t send_bytes = byte_counts[send_block];
    const std::size_t recv_bytes = byte_counts[recv_block];
    if (send_bytes == 0 && recv_bytes == 0) continue;
    call.send_recv(send_bytes > 0 ? right : -1, static_cast<uint32_t>(k), out + offsets[send_block],
                   send_bytes, recv_bytes > 0 ? left : -1, out + offsets[recv_block], recv_bytes);
  }
}

}  // namespace weft::coll
