#include <algorithm>
#include <cstring>
#include <numeric>

#include "coll/member_list.h"
#include "coll/shm/shm_collectives.h"
#include "util/stream_copy.h"

namespace weft::coll {

namespace {

// Blocks of at most inline_bytes() each (every member derives that from the same sizes): one
// round in the arrival lines, without the piece bookkeeping of longer calls, whose
// instructions are most of a small call's time.
void inline_round(CollectiveCall& call, const uint8_t* mine, uint8_t* out,
                  std::span<const std::size_t> byte_counts, std::size_t largest) {
  const int me = call.rank();
  const std::size_t n = byte_counts[me];
  const std::size_t my_offset =
      std::accumulate(byte_counts.begin(), byte_counts.begin() + me, std::size_t{0});
  if (n) std::memcpy(call.round_slot(largest), mine, n);
  call.arrive_round();
  if (n && mine != out + my_offset) std::memmove(out + my_offset, mine, n);
  call.wait_round();
  std::size_t offset = 0;
  for (int m = 0; m < call.size(); ++m) {
    if (m != me && byte_counts[m]) {
      std::memcpy(out + offset, call.member_slot(m, largest), byte_counts[m]);
    }
    offset += byte_counts[m];
  }
}

// inline_round of an even call: every offset is a multiple of the block.
void even_inline_round(CollectiveCall& call, const uint8_t* mine, uint8_t* out, std::size_t block) {
  const int me = call.rank();
  uint8_t* my_block = out + static_cast<std::size_t>(me) * block;
  if (block) std::memcpy(call.round_slot(block), mine, block);
  call.arrive_round();
  if (block && mine != my_block) std::memmove(my_block, mine, block);
  call.wait_round();
  if (!block) return;
  for (int m = 0; m < call.size(); ++m) {
    if (m != me)
      std::memcpy(out + static_cast<std::size_t>(m) * block, call.member_slot(m, block), block);
  }
}

}  // namespace

void shm_all_gather(CollectiveCall& call, const void* input, void* output,
                    std::span<const std::size_t> byte_counts) {
  const int p = call.size();
  const int me = call.rank();
  auto* out = static_cast<uint8_t*>(output);
  const std::size_t largest = *std::max_element(byte_counts.begin(), byte_counts.end());
  if (p > 1 && largest <= call.inline_bytes()) {
    return inline_round(call, static_cast<const uint8_t*>(input), out, byte_counts, largest);
  }
  MemberList<std::size_t> offsets(p, 0);
  for (int m = 1; m < p; ++m) offsets[m] = offsets[m - 1] + byte_counts[m - 1];
  const std::size_t total = offsets[p - 1] + byte_counts[p - 1];
  const auto* mine = static_cast<const uint8_t*>(input);
  // In place when the input already is this member's block of the output. Otherwise my block
  // is copied piece by piece while the others arrive, from the input, which each piece was just
  // read from to fill my slot — unless the input lies in the output, which the rounds change.
  bool copy_mine = mine != out + offsets[me] && byte_counts[me];
  if (copy_mine && (p == 1 || (mine < out + total && out < mine + byte_counts[me]))) {
    std::memmove(out + offsets[me], mine, byte_counts[me]);
    copy_mine = false;
  }
  if (p == 1) return;
  const uint8_t* source = copy_mine ? mine : out + offsets[me];
  const std::size_t piece = call.round_bytes();
  const std::size_t rounds = std::max<std::size_t>(1, (largest + piece - 1) / piece);
  auto length_of = [&](int m, std::size_t k) {
    return std::min(piece, byte_counts[m] - std::min(byte_counts[m], k * piece));
  };
  for (std::size_t k = 0; k < rounds; ++k) {
    const std::size_t n = length_of(me, k);
    if (n) call.fill_slot(call.round_slot(), source + k * piece, n, n);
    call.arrive_round();
    if (copy_mine && n) {
      util::copy_into_output(out + offsets[me] + k * piece, source + k * piece, n, total);
    }
    call.wait_round();
    for (int m = 0; m < p; ++m) {
      const std::size_t length = length_of(m, k);
      if (m == me || !length) continue;
      util::copy_into_output(out + offsets[m] + k * piece, call.member_slot(m), length, total);
    }
  }
}

void shm_even_all_gather(CollectiveCall& call, const void* input, void* output, std::size_t block) {
  const int p = call.size();
  if (p > 1 && block <= call.inline_bytes()) {
    return even_inline_round(call, static_cast<const uint8_t*>(input),
                             static_cast<uint8_t*>(output), block);
  }
  shm_all_gather(call, input, output, MemberList<std::size_t>(p, block));
}

}  // namespace weft::coll
