#include "coll/all_reduce/rabenseifner_all_reduce.h"

#include <cstdint>
#include <vector>

#include "coll/patterns/recursive_doubling.h"
#include "coll/patterns/ring.h"
#include "coll/scratch.h"
#include "reduce/reduce_kernels.h"

namespace weft::coll {

namespace {

// Sends `send_count` elements at `send` and receives `recv_count` at `recv` from the same
// partner; a side with no elements is skipped (the partner computes the same counts).
void swap_with(CollectiveCall& call, int partner, uint32_t step, const uint8_t* send,
               std::size_t send_bytes, uint8_t* recv, std::size_t recv_bytes) {
  if (send_bytes == 0 && recv_bytes == 0) return;
  call.send_recv(send_bytes > 0 ? partner : -1, step, send, send_bytes,
                 recv_bytes > 0 ? partner : -1, recv, recv_bytes);
}

}  // namespace

void rabenseifner_all_reduce(CollectiveCall& call, void* data, std::size_t count, DType dtype,
                             ReduceOp op) {
  reduce::check_supported(dtype, op);  // before any message, so every rank fails alike
  if (call.size() == 1 || count == 0) return;
  const patterns::PowerOfTwoFold fold(call.rank(), call.size());
  const std::size_t esize = size_of(dtype);
  const std::size_t bytes = count * esize;
  auto* mine = static_cast<uint8_t*>(data);
  const int pof2 = fold.pof2();
  const int rounds = fold.rounds();
  // Step numbers: 0 the fold, 1 + k halving round k, 1 + rounds + k doubling round k,
  // 1 + 2 rounds the unfold.
  const uint32_t fold_step = 0;
  const auto unfold_step = static_cast<uint32_t>(1 + 2 * rounds);

  if (fold.is_extra()) {
    call.send(fold.fold_partner(), fold_step, mine, bytes);
    call.recv(fold.fold_partner(), unfold_step, mine, bytes);
    return;
  }
  // The largest span received while halving: the first round's kept half (at most the lower
  // half, as the first blocks are the bigger ones), or a whole folded buffer.
  const std::size_t half = patterns::blocks_range(count, pof2, 0, pof2 / 2).count;
  Scratch scratch((fold.is_fold_target() ? count : half) * esize);
  if (fold.is_fold_target()) {
    call.recv(fold.fold_partner(), fold_step, scratch.data(), bytes);
    reduce::reduce_into(dtype, op, mine, scratch.data(), count);
  }

  for (int round = 0; round < rounds; ++round) {
    const patterns::HalvingStep step = fold.halving_step(round);
    const patterns::ElementRange keep =
        patterns::blocks_range(count, pof2, step.keep.first, step.keep.last);
    const patterns::ElementRange give =
        patterns::blocks_range(count, pof2, step.send.first, step.send.last);
    swap_with(call, step.partner, static_cast<uint32_t>(1 + round), mine + give.offset * esize,
              give.count * esize, scratch.data(), keep.count * esize);
    reduce::reduce_into(dtype, op, mine + keep.offset * esize, scratch.data(), keep.count);
  }
  for (int round = 0; round < rounds; ++round) {
    const patterns::DoublingStep step = fold.doubling_step(round);
    const patterns::ElementRange own =
        patterns::blocks_range(count, pof2, step.send.first, step.send.last);
    const patterns::ElementRange theirs =
        patterns::blocks_range(count, pof2, step.recv.first, step.recv.last);
    swap_with(call, step.partner, static_cast<uint32_t>(1 + rounds + round),
              mine + own.offset * esize, own.count * esize, mine + theirs.offset * esize,
              theirs.count * esize);
  }
  if (fold.is_fold_target()) call.send(fold.fold_partner(), unfold_step, mine, bytes);
}

}  // namespace weft::coll
