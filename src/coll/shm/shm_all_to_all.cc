#include <algorithm>
#include <cstring>

#include "coll/shm/shm_collectives.h"
#include "weft/error.h"

namespace weft::coll {

namespace {
// Round 0's header: the member's largest send, then what it sends to each member.
std::size_t header_bytes(int p) { return (8 + 8 * static_cast<std::size_t>(p) + 63) / 64 * 64; }
}  // namespace

// Round k: after the header, region d of a member's slot holds piece k of what it sends to d.
// Split sizes differ by member, so the number of rounds is agreed in round 0: every member
// publishes its largest send there and all take the maximum.
void shm_all_to_all(CollectiveCall& call, const void* input,
                    const std::vector<std::size_t>& send_bytes,
                    const std::vector<std::size_t>& send_offsets, void* output,
                    const std::vector<std::size_t>& recv_bytes,
                    const std::vector<std::size_t>& recv_offsets) {
  const int p = call.size();
  const int me = call.rank();
  const auto* in = static_cast<const uint8_t*>(input);
  auto* out = static_cast<uint8_t*>(output);
  if (p == 1) {
    if (send_bytes[0]) std::memmove(out + recv_offsets[0], in + send_offsets[0], send_bytes[0]);
    return;
  }
  const std::size_t budget = call.round_bytes();
  const std::size_t kHeader = header_bytes(p);
  // Whole cache lines: glibc copies large blocks with `rep movsb`, which slows down several
  // times when source and destination are not equally aligned (a 1 MiB all_to_all ran at a
  // quarter of the speed of an all_gather with regions 32 bytes off).
  const std::size_t share = (budget - std::min(budget, kHeader)) / p;
  const std::size_t region = share >= 64 ? share / 64 * 64 : std::max<std::size_t>(1, share);
  const std::size_t my_largest = *std::max_element(send_bytes.begin(), send_bytes.end());
  auto piece_of = [&](std::size_t total, std::size_t k) {
    return std::min(region, total - std::min(total, k * region));
  };
  std::size_t rounds = 1;
  for (std::size_t k = 0; k < rounds; ++k) {
    uint8_t* slot = call.round_slot();
    if (k == 0) {
      std::memcpy(slot, &my_largest, sizeof my_largest);
      std::memcpy(slot + 8, send_bytes.data(), 8 * static_cast<std::size_t>(p));
    }
    for (int d = 0; d < p; ++d) {
      if (std::size_t n = piece_of(send_bytes[d], k)) {
        std::memcpy(slot + kHeader + d * region, in + send_offsets[d] + k * region, n);
      }
    }
    call.finish_round();
    if (k == 0) {
      std::size_t largest = 0;
      for (int m = 0; m < p; ++m) {
        std::size_t theirs;
        std::memcpy(&theirs, call.member_slot(m), sizeof theirs);
        largest = std::max(largest, theirs);
        uint64_t to_me;
        std::memcpy(&to_me, call.member_slot(m) + 8 + 8 * static_cast<std::size_t>(me), 8);
        if (to_me != recv_bytes[m]) {
          throw Error(ErrorCode::kMismatch,
                      "all_to_all split sizes disagree: rank " + std::to_string(m) + " sends " +
                          std::to_string(to_me) + " bytes to rank " + std::to_string(me) +
                          ", which expects " + std::to_string(recv_bytes[m]));
        }
      }
      rounds = std::max<std::size_t>(1, (largest + region - 1) / region);
    }
    for (int s = 0; s < p; ++s) {
      if (std::size_t n = piece_of(recv_bytes[s], k)) {
        std::memcpy(out + recv_offsets[s] + k * region, call.member_slot(s) + kHeader + me * region,
                    n);
      }
    }
  }
}

}  // namespace weft::coll
