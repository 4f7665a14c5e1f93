// Reduction operators, as torch.distributed.ReduceOp.
//
// Bitwise ops (BAND, BOR, BXOR) apply to integer and bool dtypes only. AVG divides the sum by
// the number of contributing ranks; PREMUL_SUM multiplies each input by factor before summing.
#pragma once

#include <cstdint>
#include <string_view>

#include "weft/export.h"

namespace weft {

struct WEFT_API ReduceOp {
  enum Kind : uint8_t { kSum, kProduct, kMin, kMax, kAvg, kBand, kBor, kBxor, kPremulSum };

  constexpr ReduceOp(Kind k = kSum) : kind(k) {}
  static constexpr ReduceOp premul_sum(double f) {
    ReduceOp op(kPremulSum);
    op.factor = f;
    return op;
  }

  Kind kind;
  double factor = 1.0;  // PREMUL_SUM only
};

inline constexpr int kNumReduceOps = 9;

// "sum", "product", "min", "max", "avg", "band", "bor", "bxor", "premul_sum".
WEFT_API std::string_view name_of(ReduceOp::Kind kind);

}  // namespace weft
