#include <algorithm>
#include <cstring>

#include "coll/member_list.h"
#include "coll/shm/shm_collectives.h"
#include "reduce/reduce_kernels.h"

namespace weft::coll {

namespace {

// A call of at most LocalWindow::kInlineBytes in all: one round whose data rides in the arrival
// lines, the blocks side by side.
void inline_round(CollectiveCall& call, const uint8_t* in, uint8_t* out,
                  const MemberList<std::size_t>& offsets, std::size_t total,
                  std::span<const std::size_t> counts, DType dtype, ReduceOp op) {
  const std::size_t element = size_of(dtype);
  const std::size_t bytes = total * element;
  if (bytes) std::memcpy(call.round_slot(bytes), in, bytes);
  call.finish_round();
  const int me = call.rank();
  if (!counts[me]) return;
  MemberList<const void*> sources(call.size());
  for (int m = 0; m < call.size(); ++m) {
    sources[m] = call.member_slot(m, bytes) + offsets[me] * element;
  }
  reduce::reduce_many(dtype, op, out, sources.data(), call.size(), counts[me]);
}

// inline_round of an even call: my block starts at my rank times the count.
void even_inline_round(CollectiveCall& call, const uint8_t* in, uint8_t* out, std::size_t count,
                       DType dtype, ReduceOp op) {
  const int p = call.size();
  const std::size_t block = count * size_of(dtype);
  const std::size_t bytes = block * static_cast<std::size_t>(p);
  if (bytes) std::memcpy(call.round_slot(bytes), in, bytes);
  call.finish_round();
  if (!count) return;
  MemberList<const void*> sources(p);
  const std::size_t mine = static_cast<std::size_t>(call.rank()) * block;
  for (int m = 0; m < p; ++m) sources[m] = call.member_slot(m, bytes) + mine;
  reduce::reduce_many(dtype, op, out, sources.data(), p, count);
}

}  // namespace

// Round k: region b of each member's slot holds piece k of its input block b; member b
// reduces region b of every slot into piece k of its output.
void shm_reduce_scatter(CollectiveCall& call, const void* input, void* output,
                        std::span<const std::size_t> counts, DType dtype, ReduceOp op) {
  const int p = call.size();
  const int me = call.rank();
  const std::size_t element = size_of(dtype);
  if (op.kind == ReduceOp::kPremulSum) op = ReduceOp::kSum;  // inputs arrive scaled
  if (p == 1) {
    if (counts[0] && input != output) std::memmove(output, input, counts[0] * element);
    return;
  }
  MemberList<std::size_t> offsets(p, 0);
  for (int b = 1; b < p; ++b) offsets[b] = offsets[b - 1] + counts[b - 1];
  const std::size_t total = offsets[p - 1] + counts[p - 1];
  const auto* in = static_cast<const uint8_t*>(input);
  auto* out = static_cast<uint8_t*>(output);
  if (total * element <= call.inline_bytes()) {
    return inline_round(call, in, out, offsets, total, counts, dtype, op);
  }
  const std::size_t region = std::max<std::size_t>(1, call.round_bytes() / p / element);
  const std::size_t largest = *std::max_element(counts.begin(), counts.end());
  const std::size_t rounds = std::max<std::size_t>(1, (largest + region - 1) / region);
  auto length_of = [&](int b, std::size_t k) {
    return std::min(region, counts[b] - std::min(counts[b], k * region));
  };
  MemberList<const void*> sources(p);
  for (std::size_t k = 0; k < rounds; ++k) {
    uint8_t* slot = call.round_slot();
    std::size_t written = 0;
    for (int b = 0; b < p; ++b) written += length_of(b, k) * element;
    for (int b = 0; b < p; ++b) {
      if (std::size_t n = length_of(b, k)) {
        call.fill_slot(slot + b * region * element, in + (offsets[b] + k * region) * element,
                       n * element, written);
      }
    }
    call.finish_round();
    std::size_t n = length_of(me, k);
    if (!n) continue;
    for (int m = 0; m < p; ++m) sources[m] = call.member_slot(m) + me * region * element;
    reduce::reduce_many(dtype, op, out + k * region * element, sources.data(), p, n);
  }
}

void shm_even_reduce_scatter(CollectiveCall& call, const void* input, void* output,
                             std::size_t count, DType dtype, ReduceOp op) {
  const int p = call.size();
  if (p > 1 && count * static_cast<std::size_t>(p) * size_of(dtype) <= call.inline_bytes()) {
    if (op.kind == ReduceOp::kPremulSum) op = ReduceOp::kSum;  // inputs arrive scaled
    return even_inline_round(call, static_cast<const uint8_t*>(input),
                             static_cast<uint8_t*>(output), count, dtype, op);
  }
  shm_reduce_scatter(call, input, output, MemberList<std::size_t>(p, count), dtype, op);
}

}  // namespace weft::coll
