#include <algorithm>
#include <cstring>

#include "coll/shm/shm_collectives.h"
#include "util/stream_copy.h"

namespace weft::coll {

void shm_all_gather(CollectiveCall& call, const void* input, void* output,
                    const std::vector<std::size_t>& byte_counts) {
  const int p = call.size();
  const int me = call.rank();
  auto* out = static_cast<uint8_t*>(output);
  std::vector<std::size_t> offsets(p, 0);
  for (int m = 1; m < p; ++m) offsets[m] = offsets[m - 1] + byte_counts[m - 1];
  const auto* mine = static_cast<const uint8_t*>(input);
  // In place when the input already is this member's block of the output.
  if (mine != out + offsets[me] && byte_counts[me]) {
    std::memmove(out + offsets[me], mine, byte_counts[me]);
  }
  if (p == 1) return;
  const std::size_t piece = call.round_bytes();
  const std::size_t largest = *std::max_element(byte_counts.begin(), byte_counts.end());
  const std::size_t rounds = std::max<std::size_t>(1, (largest + piece - 1) / piece);
  auto length_of = [&](int m, std::size_t k) {
    return std::min(piece, byte_counts[m] - std::min(byte_counts[m], k * piece));
  };
  const std::size_t total = offsets[p - 1] + byte_counts[p - 1];
  for (std::size_t k = 0; k < rounds; ++k) {
    if (std::size_t n = length_of(me, k)) {
      std::memcpy(call.round_slot(), out + offsets[me] + k * piece, n);
    }
    call.finish_round();
    for (int m = 0; m < p; ++m) {
      std::size_t n = length_of(m, k);
      if (m != me && n)
        util::copy_into_output(out + offsets[m] + k * piece, call.member_slot(m), n, total);
    }
  }
}

}  // namespace weft::coll
