#include "coll/all_gather/bruck_all_gather.h"

#include <cstring>
#include <memory>
#include <string>

#include "coll/patterns/bruck.h"
#include "weft/error.h"

namespace weft::coll {

void bruck_all_gather(CollectiveCall& call, const void* input, void* output,
                      std::span<const std::size_t> byte_counts) {
  const int p = call.size(), rank = call.rank();
  if (byte_counts.size() != static_cast<std::size_t>(p)) {
    throw Error(ErrorCode::kInternal, "bruck_all_gather: " + std::to_string(byte_counts.size()) +
                                          " byte counts for " + std::to_string(p) + " ranks");
  }
  const std::size_t m = byte_counts[0];
  for (int r = 1; r < p; ++r) {
    if (byte_counts[r] != m) {
      throw Error(ErrorCode::kInternal, "bruck_all_gather needs equal counts: rank 0 has " +
                                            std::to_string(m) + " bytes, rank " +
                                            std::to_string(r) + " has " +
                                            std::to_string(byte_counts[r]));
    }
  }
  if (m == 0) return;
  auto* out = static_cast<unsigned char*>(output);

  // Rank 0's slot i is output block i: no scratch, no rotation.
  std::unique_ptr<unsigned char[]> scratch;
  unsigned char* slots = out;
  if (rank != 0) {
    scratch.reset(new unsigned char[static_cast<std::size_t>(p) * m]);
    slots = scratch.get();
  }
  if (slots != input) std::memcpy(slots, input, m);

  uint32_t step = 0;
  for (const auto& round : patterns::bruck_rounds(rank, p)) {
    const std::size_t length = static_cast<std::size_t>(round.blocks) * m;
    call.send_recv(round.send_peer, step++, slots, length, round.recv_peer,
                   slots + static_cast<std::size_t>(round.distance) * m, length);
  }

  if (rank != 0) {
    // Slot i holds block (rank + i) % p: slots [0, p - rank) are blocks [rank, p), the rest
    // blocks [0, rank).
    const std::size_t tail = static_cast<std::size_t>(p - rank) * m;
    std::memcpy(out + static_cast<std::size_t>(rank) * m, slots, tail);
    std::memcpy(out, slots + tail, static_cast<std::size_t>(rank) * m);
  }
}

}  // namespace weft::coll
