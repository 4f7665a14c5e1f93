// reduce_into, reduce_pair, reduce_many and check_supported over a kernel table.
#include "reduce/reduce_kernels.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "reduce/kernel_table.h"
#include "weft/error.h"

namespace weft::reduce {
namespace {

// reduce_many works on blocks this size so that dst and the current input stay in L1 (48 KiB
// on current cores) while every input streams through once, instead of one pass over all of
// dst per input.
constexpr std::size_t kBlockBytes = 8 * 1024;
static_assert(std::ranges::all_of(weft::detail::kDTypeSizes,
                                  [](std::size_t size) {
                                    return std::has_single_bit(size) && size <= kBlockBytes;
                                  }),
              "reduce_many_chained counts a block's elements with a shift");
// Elements per float32 accumulator block for the 16-bit types (two such blocks on the stack).
constexpr std::size_t kHalfBlock = 1024;

bool is_half(DType dtype) { return dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

[[noreturn]] void refuse(DType dtype, ReduceOp::Kind kind, const char* why) {
  throw Error(ErrorCode::kInvalidArgument, "reduce op " + std::string(name_of(kind)) +
                                               " is not supported for dtype " +
                                               std::string(name_of(dtype)) + ": " + why);
}

// The kernel that implements an op for a dtype that is bool or not (bool's logical mapping
// included).
constexpr KernelOp kernel_op_of(bool is_bool, ReduceOp::Kind kind) {
  switch (kind) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:        // divided afterwards (divide())
    case ReduceOp::kPremulSum:  // inputs scaled beforehand (scale(), or reduce_many)
      return is_bool ? KernelOp::kBor : KernelOp::kSum;
    case ReduceOp::kProduct:
      return is_bool ? KernelOp::kBand : KernelOp::kProduct;
    case ReduceOp::kMin:
      return is_bool ? KernelOp::kBand : KernelOp::kMin;
    case ReduceOp::kMax:
      return is_bool ? KernelOp::kBor : KernelOp::kMax;
    case ReduceOp::kBand:
      return KernelOp::kBand;
    case ReduceOp::kBor:
      return KernelOp::kBor;
    case ReduceOp::kBxor:
      return KernelOp::kBxor;
  }
  return KernelOp::kSum;  // unreachable: check_supported rejects unknown kinds first
}

// kernel_op_of as a table: every reduction looks its kernel up.
constexpr auto kKernelOps = [] {
  struct Table {
    KernelOp of[2][kNumReduceOps] = {};
  } table;
  for (int k = 0; k < kNumReduceOps; ++k) {
    table.of[0][k] = kernel_op_of(false, static_cast<ReduceOp::Kind>(k));
    table.of[1][k] = kernel_op_of(true, static_cast<ReduceOp::Kind>(k));
  }
  return table;
}();

BinaryKernel binary_for(const KernelTable& table, DType dtype, ReduceOp::Kind kind) {
  const KernelOp op = kKernelOps.of[dtype == DType::kBool][static_cast<int>(kind)];
  return table.binary[static_cast<int>(dtype)][static_cast<int>(op)];
}

template <typename T>
void scale_copy(T* dst, const T* src, std::size_t count, T factor) {
  for (std::size_t i = 0; i < count; ++i) dst[i] = src[i] * factor;
}

// Non-16-bit types without PREMUL_SUM: chain the pair kernel block by block.
void reduce_many_chained(BinaryKernel kernel, std::size_t elem_size, char* dst,
                         const void* const* srcs, std::size_t nsrcs, std::size_t count) {
  // Element sizes are powers of two: a shift, where a division would be a visible part of a
  // small reduction.
  const std::size_t block = kBlockBytes >> std::countr_zero(elem_size);
  for (std::size_t start = 0; start < count; start += block) {
    const std::size_t n = std::min(block, count - start);
    const std::size_t offset = start * elem_size;
    char* d = dst + offset;
    const char* first = static_cast<const char*>(srcs[0]) + offset;
    if (nsrcs == 1) {
      if (d != first) std::memcpy(d, first, n * elem_size);
      continue;
    }
    kernel(d, first, static_cast<const char*>(srcs[1]) + offset, n);
    for (std::size_t k = 2; k < nsrcs; ++k) {
      kernel(d, d, static_cast<const char*>(srcs[k]) + offset, n);
    }
  }
}

// float32/float64 PREMUL_SUM: each input is scaled into a block buffer, then summed in. Not
// inlined, like reduce_many_half: their block buffers would make every reduction, the smallest
// included, set up their stack frame.
template <typename T>
[[gnu::noinline]] void reduce_many_premul(BinaryKernel sum, double factor, T* dst,
                                          const void* const* srcs, std::size_t nsrcs,
                                          std::size_t count) {
  constexpr std::size_t kBlock = kBlockBytes / sizeof(T);
  T scaled[kBlock];
  const T f = static_cast<T>(factor);
  for (std::size_t start = 0; start < count; start += kBlock) {
    const std::size_t n = std::min(kBlock, count - start);
    for (std::size_t k = 0; k < nsrcs; ++k) {
      scale_copy(scaled, static_cast<const T*>(srcs[k]) + start, n, f);
      if (k == 0) {
        std::memcpy(dst + start, scaled, n * sizeof(T));
      } else {
        sum(dst + start, dst + start, scaled, n);
      }
    }
  }
}

// float16/bfloat16: widen each input into float32, combine with the float32 kernel, round
// once at the end of each block.
[[gnu::noinline]] void reduce_many_half(const KernelTable& table, DType dtype, ReduceOp op,
                                        uint16_t* dst, const void* const* srcs, std::size_t nsrcs,
                                        std::size_t count) {
  const WidenKernel widen = table.widen[half_index(dtype)];
  const NarrowKernel narrow = table.narrow[half_index(dtype)];
  const BinaryKernel combine = binary_for(table, DType::kFloat32, op.kind);
  const bool premul = op.kind == ReduceOp::kPremulSum;
  const float factor = static_cast<float>(op.factor);
  float acc[kHalfBlock];
  float next[kHalfBlock];
  for (std::size_t start = 0; start < count; start += kHalfBlock) {
    const std::size_t n = std::min(kHalfBlock, count - start);
    widen(acc, static_cast<const uint16_t*>(srcs[0]) + start, n);
    if (premul) scale_copy(acc, acc, n, factor);
    for (std::size_t k = 1; k < nsrcs; ++k) {
      widen(next, static_cast<const uint16_t*>(srcs[k]) + start, n);
      if (premul) scale_copy(next, next, n, factor);
      combine(acc, acc, next, n);
    }
    narrow(dst + start, acc, n);
  }
}

// reduce_many of two inputs, which are one pair: the pair kernel rounds a 16-bit type once
// too, and needs no blocks (they keep dst in the cache while a third input and more stream
// through), so that a small reduction of two members is little more than its kernel. False
// (nothing done) for any other number of inputs and for PREMUL_SUM.
inline bool reduced_as_pair(const KernelTable& table, DType dtype, ReduceOp op, void* dst,
                            const void* const* srcs, std::size_t nsrcs, std::size_t count) {
  check_supported(dtype, op);
  if (nsrcs != 2 || op.kind == ReduceOp::kPremulSum) return false;
  binary_for(table, dtype, op.kind)(dst, srcs[0], srcs[1], count);
  return true;
}

}  // namespace

namespace detail {

void throw_unsupported(DType dtype, ReduceOp op) {
  if (static_cast<int>(dtype) >= kNumDTypes) {
    throw Error(ErrorCode::kInvalidArgument,
                "unknown dtype code " + std::to_string(static_cast<int>(dtype)));
  }
  if (static_cast<int>(op.kind) >= kNumReduceOps) {
    throw Error(ErrorCode::kInvalidArgument,
                "unknown reduce op code " + std::to_string(static_cast<int>(op.kind)));
  }
  if (is_float(dtype) && is_bitwise(op.kind)) {
    refuse(dtype, op.kind, "bitwise ops need an integer or bool dtype");
  }
  if (dtype == DType::kBool && op.kind == ReduceOp::kAvg) {
    refuse(dtype, op.kind, "a bool has no average");
  }
  if (!is_float(dtype) && op.kind == ReduceOp::kPremulSum) {
    refuse(dtype, op.kind, "premul_sum needs a floating-point dtype");
  }
  throw Error(ErrorCode::kInternal, "reduce op " + std::string(name_of(op.kind)) + " on dtype " +
                                        std::string(name_of(dtype)) +
                                        " refused, but no rule says why");
}

}  // namespace detail

void reduce_pair_with(const KernelTable& table, DType dtype, ReduceOp op, void* dst, const void* a,
                      const void* b, std::size_t count) {
  check_supported(dtype, op);
  binary_for(table, dtype, op.kind)(dst, a, b, count);
}

void reduce_many_with(const KernelTable& table, DType dtype, ReduceOp op, void* dst,
                      const void* const* srcs, std::size_t nsrcs, std::size_t count) {
  if (reduced_as_pair(table, dtype, op, dst, srcs, nsrcs, count)) return;
  if (nsrcs == 0) throw Error(ErrorCode::kInvalidArgument, "reduce_many needs at least one input");
  if (is_half(dtype)) {
    reduce_many_half(table, dtype, op, static_cast<uint16_t*>(dst), srcs, nsrcs, count);
  } else if (op.kind == ReduceOp::kPremulSum) {
    const BinaryKernel sum = binary_for(table, dtype, ReduceOp::kSum);
    if (dtype == DType::kFloat32) {
      reduce_many_premul(sum, op.factor, static_cast<float*>(dst), srcs, nsrcs, count);
    } else {
      reduce_many_premul(sum, op.factor, static_cast<double*>(dst), srcs, nsrcs, count);
    }
  } else {
    reduce_many_chained(binary_for(table, dtype, op.kind), size_of(dtype), static_cast<char*>(dst),
                        srcs, nsrcs, count);
  }
}

void reduce_into(DType dtype, ReduceOp op, void* dst, const void* src, std::size_t count) {
  reduce_pair_with(active_kernel_table(), dtype, op, dst, dst, src, count);
}

void reduce_pair(DType dtype, ReduceOp op, void* dst, const void* a, const void* b,
                 std::size_t count) {
  reduce_pair_with(active_kernel_table(), dtype, op, dst, a, b, count);
}

void reduce_many(DType dtype, ReduceOp op, void* dst, const void* const* srcs, std::size_t nsrcs,
                 std::size_t count) {
  const KernelTable& table = active_kernel_table();
  if (reduced_as_pair(table, dtype, op, dst, srcs, nsrcs, count)) return;
  reduce_many_with(table, dtype, op, dst, srcs, nsrcs, count);
}

}  // namespace weft::reduce
