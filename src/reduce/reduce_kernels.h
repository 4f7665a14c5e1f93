// Element-wise reduction kernels: the arithmetic of every reducing collective.
//
// Contract: plain functions on caller-owned buffers of `count` elements of `dtype`; no
// allocation on the heap, no state beyond the kernel table chosen on first use, safe to call
// from any number of threads on disjoint (or only read-shared) buffers. Pointers need only the
// alignment of their element type (and not even that: kernels load and store unaligned).
// `count` may be 0, in which case no pointer is touched.
//
// Semantics (torch.distributed's):
// - Integer SUM and PRODUCT wrap around (two's complement), never undefined behaviour.
// - Float MIN and MAX propagate NaN: if either input is NaN the result is NaN.
// - float16 and bfloat16 are converted to float32, combined, and rounded back to nearest even.
// - bool: SUM and MAX are logical OR, PRODUCT and MIN logical AND; inputs must be 0 or 1.
// - AVG reduces as SUM here; the caller divides by the number of ranks with divide() at the
//   end. PREMUL_SUM reduces as SUM in reduce_into/reduce_pair (each rank scales its own input
//   first with scale()); reduce_many applies the factor to each input itself.
// - Bitwise ops on float dtypes, AVG on bool and PREMUL_SUM on integer or bool dtypes are
//   errors: every entry point throws weft::Error(kInvalidArgument) naming the op and dtype.
//
// Instruction set: the kernels are chosen once per process by CPU features (AVX-512, else
// AVX2 with FMA and F16C, else portable scalar code). The environment variable
// WEFT_REDUCE_ISA=scalar|avx2|avx512 forces one for testing; naming one this CPU cannot run,
// or any other value, makes the first reduction throw kInvalidArgument naming the variable.
// It is read through util's settings table, in one place (kernel_table.cc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft::reduce {

// dst[i] = dst[i] OP src[i] for i < count.
void reduce_into(DType dtype, ReduceOp op, void* dst, const void* src, std::size_t count);

// dst[i] = a[i] OP b[i]; dst may be a or b (exactly), but must not partially overlap them.
void reduce_pair(DType dtype, ReduceOp op, void* dst, const void* a, const void* b,
                 std::size_t count);

// dst[i] = OP over srcs[0..nsrcs)[i], nsrcs >= 1. Works block by block so each input is read
// from memory once. float16/bfloat16 accumulate in float32 and round once at the end (a chain
// of reduce_into would round nsrcs-1 times). PREMUL_SUM multiplies each input by op.factor
// before summing. dst may be srcs[0] (exactly); it must not overlap any other input.
void reduce_many(DType dtype, ReduceOp op, void* dst, const void* const* srcs, std::size_t nsrcs,
                 std::size_t count);

// dst[i] *= factor, for float dtypes only (float16/bfloat16 computed in float32, rounded once).
// Throws kInvalidArgument for any other dtype.
void scale(DType dtype, void* dst, std::size_t count, double factor);

// dst[i] /= divisor: the end of AVG. Floats divide exactly (not by a reciprocal, so AVG of
// equal inputs gives back the input); integers truncate toward zero like C++ (-7 / 2 == -3).
// Throws kInvalidArgument for bool, for divisor 0, and for a divisor above INT64_MAX.
void divide(DType dtype, void* dst, std::size_t count, std::size_t divisor);

namespace detail {
constexpr bool is_float(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kFloat16 ||
         dtype == DType::kBFloat16;
}
constexpr bool is_bitwise(ReduceOp::Kind kind) {
  return kind == ReduceOp::kBand || kind == ReduceOp::kBor || kind == ReduceOp::kBxor;
}
// Whether `kind` can reduce `dtype` by the rules above.
constexpr bool reduces(DType dtype, ReduceOp::Kind kind) {
  if (is_float(dtype) && is_bitwise(kind)) return false;
  if (dtype == DType::kBool && kind == ReduceOp::kAvg) return false;
  return is_float(dtype) || kind != ReduceOp::kPremulSum;
}
// Bit k of kReducibleBy[d]: reduces(d, k). Every reduction checks its pair, twice for a
// reduce or all_reduce (once as the call starts, once in the kernels): a load and a test.
inline constexpr auto kReducibleBy = [] {
  struct Table {
    uint16_t kinds[kNumDTypes] = {};
  } table;
  for (int d = 0; d < kNumDTypes; ++d) {
    for (int k = 0; k < kNumReduceOps; ++k) {
      if (reduces(static_cast<DType>(d), static_cast<ReduceOp::Kind>(k))) {
        table.kinds[d] = static_cast<uint16_t>(table.kinds[d] | 1u << k);
      }
    }
  }
  return table;
}();
static_assert(kNumReduceOps <= 16, "kReducibleBy holds a bit per op kind");
[[noreturn]] void throw_unsupported(DType dtype, ReduceOp op);
}  // namespace detail

// Throws weft::Error(kInvalidArgument) if `op` cannot reduce `dtype` (see above), or either is
// not a known code.
inline void check_supported(DType dtype, ReduceOp op) {
  const auto d = static_cast<unsigned>(dtype);
  const auto k = static_cast<unsigned>(op.kind);
  if (d >= kNumDTypes || k >= kNumReduceOps || !(detail::kReducibleBy.kinds[d] >> k & 1u))
      [[unlikely]] {
    detail::throw_unsupported(dtype, op);
  }
}

// The instruction set in use: "avx512", "avx2" or "scalar".
const char* active_isa();

}  // namespace weft::reduce
