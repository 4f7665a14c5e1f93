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

  if (input != out + offsets[rank] && byte_counts[rank] > 0) {
    std::memcpy(out + offsets[rank], input, byte_counts[rank]);
  }
  const int right = (rank + 1) % p, left = (rank + p - 1) % p;
  for (int k = 0; k < p - 1; ++k) {
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
