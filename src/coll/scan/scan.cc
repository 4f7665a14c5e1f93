#include "coll/scan/scan.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "coll/scratch.h"
#include "reduce/reduce_kernels.h"

namespace weft::coll {

namespace {

void scan(CollectiveCall& call, const void* input, void* output, std::size_t count, DType dtype,
          ReduceOp op, bool exclusive) {
  reduce::check_supported(dtype, op);  // before any message, so every rank fails alike
  if (count == 0) return;
  const std::size_t bytes = count * size_of(dtype);
  const int rank = call.rank();
  const int size = call.size();
  // The running total of the ranks seen so far (a contiguous range containing this rank); read
  // input once, before output (which may be input) is written.
  std::vector<uint8_t> total(static_cast<const uint8_t*>(input),
                             static_cast<const uint8_t*>(input) + bytes);
  Scratch incoming(size > 1 ? bytes : 0);
  if (!exclusive && output != input) std::memcpy(output, input, bytes);
  bool have_result = !exclusive;  // exscan's result starts empty

  for (int round = 0; (1 << round) < size; ++round) {
    const int partner = rank ^ (1 << round);
    if (partner >= size) continue;
    call.send_recv(partner, static_cast<uint32_t>(round), total.data(), bytes, partner,
                   incoming.data(), bytes);
    reduce::reduce_into(dtype, op, total.data(), incoming.data(), count);
    if (partner < rank) {
      if (have_result) {
        reduce::reduce_into(dtype, op, output, incoming.data(), count);
      } else {
        std::memcpy(output, incoming.data(), bytes);
        have_result = true;
      }
    }
  }
}

}  // namespace

void inclusive_scan(CollectiveCall& call, const void* input, void* output, std::size_t count,
                    DType dtype, ReduceOp op) {
  scan(call, input, output, count, dtype, op, /*exclusive=*/false);
}

void exclusive_scan(CollectiveCall& call, const void* input, void* output, std::size_t count,
                    DType dtype, ReduceOp op) {
  scan(call, input, output, count, dtype, op, /*exclusive=*/true);
}

}  // namespace weft::coll
