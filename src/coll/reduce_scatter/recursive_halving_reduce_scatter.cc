#include "coll/reduce_scatter/recursive_halving_reduce_scatter.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "coll/patterns/adjacent_fold.h"
#include "coll/scratch.h"
#include "reduce/reduce_kernels.h"
#include "weft/error.h"

namespace weft::coll {

namespace {

// Element ranges of contiguous runs of blocks.
class BlockLayout {
 public:
  explicit BlockLayout(std::span<const std::size_t> counts) : offsets_(counts.size() + 1, 0) {
    for (std::size_t b = 0; b < counts.size(); ++b) offsets_[b + 1] = offsets_[b] + counts[b];
  }
  std::size_t total() const { return offsets_.back(); }
  std::size_t offset(patterns::BlockSpan blocks) const { return offsets_[blocks.first]; }
  std::size_t count(patterns::BlockSpan blocks) const {
    return offsets_[blocks.last] - offsets_[blocks.first];
  }

 private:
  std::vector<std::size_t> offsets_;
};

}  // namespace

void recursive_halving_reduce_scatter(CollectiveCall& call, const void* input, void* output,
                                      std::span<const std::size_t> counts, DType dtype,
                                      ReduceOp op) {
  reduce::check_supported(dtype, op);  // before any message, so every rank fails alike
  const int size = call.size();
  const int rank = call.rank();
  if (counts.size() != static_cast<std::size_t>(size)) {
    throw Error(ErrorCode::kInvalidArgument,
                "recursive_halving_reduce_scatter: " + std::to_string(counts.size()) +
                    " counts for " + std::to_string(size) + " ranks");
  }
  const std::size_t esize = size_of(dtype);
  const BlockLayout layout(counts);
  const auto* in = static_cast<const uint8_t*>(input);
  auto* out = static_cast<uint8_t*>(output);
  const patterns::BlockSpan my_block{rank, rank + 1};
  const std::size_t my_bytes = layout.count(my_block) * esize;
  if (size == 1) {
    if (my_bytes > 0 && out != in) std::memmove(out, in, my_bytes);
    return;
  }
  if (layout.total() == 0) return;
  const std::size_t total_bytes = layout.total() * esize;

  const patterns::AdjacentFold fold(rank, size);
  const int rounds = fold.rounds();
  // Step numbers: 0 the fold, 1 + k halving round k, 1 + rounds the unfold.
  const uint32_t fold_step = 0;
  const auto unfold_step = static_cast<uint32_t>(1 + rounds);
  if (fold.sits_out()) {
    call.send(fold.fold_partner(), fold_step, in, total_bytes);
    if (my_bytes > 0) call.recv(fold.fold_partner(), unfold_step, out, my_bytes);
    return;
  }

  const int me = fold.virtual_rank();
  const patterns::PowerOfTwoFold halving(me, fold.pof2());
  auto bytes_of = [&](patterns::BlockSpan virtual_span) {
    return layout.count(fold.real_blocks(virtual_span)) * esize;
  };
  auto offset_of = [&](patterns::BlockSpan virtual_span) {
    return layout.offset(fold.real_blocks(virtual_span)) * esize;
  };
  const std::size_t first_keep = rounds > 0 ? bytes_of(halving.halving_step(0).keep) : 0;
  Scratch received(fold.takes_in() ? total_bytes : first_keep);
  Scratch accumulator(total_bytes);
  // What this rank's ranges are read from: its input until it has reduced something.
  const uint8_t* current = in;
  if (fold.takes_in()) {
    call.recv(fold.fold_partner(), fold_step, received.data(), total_bytes);
    reduce::reduce_pair(dtype, op, accumulator.data(), in, received.data(), layout.total());
    current = accumulator.data();
  }

  for (int round = 0; round < rounds; ++round) {
    const patterns::HalvingStep step = halving.halving_step(round);
    const std::size_t keep_offset = offset_of(step.keep), keep_bytes = bytes_of(step.keep);
    const std::size_t give_offset = offset_of(step.send), give_bytes = bytes_of(step.send);
    const int partner = fold.real_rank(step.partner);
    // A side with nothing to move is skipped: the partner computes the same sizes.
    if (give_bytes > 0 || keep_bytes > 0) {
      call.send_recv(give_bytes > 0 ? partner : -1, static_cast<uint32_t>(1 + round),
                     current + give_offset, give_bytes, keep_bytes > 0 ? partner : -1,
                     received.data(), keep_bytes);
    }
    reduce::reduce_pair(dtype, op, accumulator.data() + keep_offset, current + keep_offset,
                        received.data(), keep_bytes / esize);
    current = accumulator.data();
  }

  // This rank now holds the reduced blocks of its virtual rank: its own, and the block of the
  // neighbour it took in.
  if (fold.takes_in()) {
    const patterns::BlockSpan theirs{fold.fold_partner(), fold.fold_partner() + 1};
    const std::size_t their_bytes = layout.count(theirs) * esize;
    if (their_bytes > 0) {
      call.send(fold.fold_partner(), unfold_step, current + layout.offset(theirs) * esize,
                their_bytes);
    }
  }
  if (my_bytes > 0) std::memcpy(out, current + layout.offset(my_block) * esize, my_bytes);
}

}  // namespace weft::coll
