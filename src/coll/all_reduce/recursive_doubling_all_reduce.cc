#include "coll/all_reduce/recursive_doubling_all_reduce.h"

#include <cstdint>
#include <vector>

#include "coll/patterns/recursive_doubling.h"
#include "coll/scratch.h"
#include "reduce/reduce_kernels.h"

namespace weft::coll {

void recursive_doubling_all_reduce(CollectiveCall& call, void* data, std::size_t count, DType dtype,
                                   ReduceOp op) {
  reduce::check_supported(dtype, op);  // before any message, so every rank fails alike
  if (call.size() == 1 || count == 0) return;
  const patterns::PowerOfTwoFold fold(call.rank(), call.size());
  const std::size_t bytes = count * size_of(dtype);
  // Step numbers: 0 the fold, 1 + k round k, 1 + rounds the unfold.
  const uint32_t fold_step = 0;
  const auto unfold_step = static_cast<uint32_t>(1 + fold.rounds());

  if (fold.is_extra()) {
    call.send(fold.fold_partner(), fold_step, data, bytes);
    call.recv(fold.fold_partner(), unfold_step, data, bytes);
    return;
  }
  Scratch scratch(bytes);
  if (fold.is_fold_target()) {
    call.recv(fold.fold_partner(), fold_step, scratch.data(), bytes);
    reduce::reduce_into(dtype, op, data, scratch.data(), count);
  }
  for (int round = 0; round < fold.rounds(); ++round) {
    const int partner = fold.doubling_partner(round);
    call.send_recv(partner, static_cast<uint32_t>(1 + round), data, bytes, partner, scratch.data(),
                   bytes);
    reduce::reduce_into(dtype, op, data, scratch.data(), count);
  }
  if (fold.is_fold_target()) call.send(fold.fold_partner(), unfold_step, data, bytes);
}

}  // namespace weft::coll
