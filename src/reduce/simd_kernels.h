// The kernel loops, written once and compiled once per instruction set, and the table builder.
//
// Contract: make_kernel_table<kVecBytes, F16Codec, BF16Codec>(isa) returns a KernelTable whose
// kernels process kVecBytes bytes per step with GCC vector extensions (kVecBytes == 0: plain
// scalar loops), then finish the remainder one element at a time with the same operator.
// GCC lowers the vector code to the instructions of the unit's -m flags (vpminsq, masked
// blends, ... on AVX-512; emulations on AVX2). A half codec converts kLanes float16/bfloat16
// values to and from a float vector (kLanes == 1: scalar only) and must round exactly as
// half_convert.h does.
//
// Included only by the per-ISA kernel units, in an unnamed namespace for the reason given in
// element_ops.h: each unit must get its own copy, compiled with its own flags.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "reduce/element_ops.h"
#include "reduce/half_convert.h"
#include "reduce/kernel_table.h"

namespace weft::reduce {
namespace {  // NOLINT(google-build-namespaces): see the contract above.

template <typename T, int kBytes>
struct VecOf {
  typedef T type __attribute__((vector_size(kBytes)));
};
// kBytes bytes of T as one GCC vector value.
template <typename T, int kBytes>
using Vec = typename VecOf<T, kBytes>::type;

// Unaligned vector load and store; memcpy compiles to a single vmovdqu/vmovups.
template <typename V, typename T>
V load_vec(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}

template <typename V, typename T>
void store_vec(T* p, V v) {
  std::memcpy(p, &v, sizeof(V));
}

template <typename T, typename Op, int kVecBytes>
void binary_kernel(void* dst, const void* a, const void* b, std::size_t count) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  std::size_t i = 0;
  if constexpr (kVecBytes > 0) {
    using V = Vec<T, kVecBytes>;
    constexpr std::size_t kLanes = kVecBytes / sizeof(T);
    // Two vectors per step: enough independent work to keep loads in flight for data in
    // L1/L2; beyond that the loop waits on memory whatever its shape.
    for (; i + 2 * kLanes <= count; i += 2 * kLanes) {
      const V r0 = Op{}(load_vec<V>(x + i), load_vec<V>(y + i));
      const V r1 = Op{}(load_vec<V>(x + i + kLanes), load_vec<V>(y + i + kLanes));
      store_vec(d + i, r0);
      store_vec(d + i + kLanes, r1);
    }
    for (; i + kLanes <= count; i += kLanes) {
      store_vec(d + i, Op{}(load_vec<V>(x + i), load_vec<V>(y + i)));
    }
  }
  for (; i < count; ++i) d[i] = Op{}(x[i], y[i]);
}

// --- float16 / bfloat16 -------------------------------------------------------------------

// Scalar codecs: kLanes == 1 means "no vector path".
struct ScalarHalfCodec {
  static constexpr int kLanes = 1;
  static float widen(uint16_t h) { return half_bits_to_float(h); }
  static uint16_t narrow(float f) { return float_to_half_bits(f); }
};

struct ScalarBFloat16Codec {
  static constexpr int kLanes = 1;
  static float widen(uint16_t b) { return bfloat16_bits_to_float(b); }
  static uint16_t narrow(float f) { return float_to_bfloat16_bits(f); }
};

// bfloat16 needs no special instructions: widening is a shift, narrowing integer rounding.
// (AVX512_BF16's vcvtneps2bf16 is not used: it flushes subnormals to zero, and the scalar
// path and the tests round them exactly.)
template <int kLanesPerVec>
struct VectorBFloat16Codec : ScalarBFloat16Codec {
  static constexpr int kLanes = kLanesPerVec;
  using Floats = Vec<float, kLanes * 4>;
  using Words = Vec<uint32_t, kLanes * 4>;
  using Halves = Vec<uint16_t, kLanes * 2>;

  static Floats load(const uint16_t* p) {
    const Words wide = __builtin_convertvector(load_vec<Halves>(p), Words) << 16;
    return __builtin_bit_cast(Floats, wide);
  }
  static void store(uint16_t* p, Floats f) {
    const Words x = __builtin_bit_cast(Words, f);
    const Words rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;  // as float_to_bfloat16_bits
    const Words quiet_nan = (x >> 16) | 0x40u;
    const Words bits = (f != f) ? quiet_nan : rounded;
    store_vec(p, __builtin_convertvector(bits, Halves));
  }
};

template <typename Codec, typename Op>
void half_binary_kernel(void* dst, const void* a, const void* b, std::size_t count) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  const uint16_t* x = static_cast<const uint16_t*>(a);
  const uint16_t* y = static_cast<const uint16_t*>(b);
  std::size_t i = 0;
  if constexpr (Codec::kLanes > 1) {
    for (; i + Codec::kLanes <= count; i += Codec::kLanes) {
      Codec::store(d + i, Op{}(Codec::load(x + i), Codec::load(y + i)));
    }
  }
  for (; i < count; ++i) d[i] = Codec::narrow(Op{}(Codec::widen(x[i]), Codec::widen(y[i])));
}

template <typename Codec>
void widen_kernel(float* dst, const void* src, std::size_t count) {
  const uint16_t* s = static_cast<const uint16_t*>(src);
  std::size_t i = 0;
  if constexpr (Codec::kLanes > 1) {
    for (; i + Codec::kLanes <= count; i += Codec::kLanes) store_vec(dst + i, Codec::load(s + i));
  }
  for (; i < count; ++i) dst[i] = Codec::widen(s[i]);
}

template <typename Codec>
void narrow_kernel(void* dst, const float* src, std::size_t count) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  std::size_t i = 0;
  if constexpr (Codec::kLanes > 1) {
    using Floats = Vec<float, Codec::kLanes * 4>;
    for (; i + Codec::kLanes <= count; i += Codec::kLanes) {
      Codec::store(d + i, load_vec<Floats>(src + i));
    }
  }
  for (; i < count; ++i) d[i] = Codec::narrow(src[i]);
}

// --- table ----------------------------------------------------------------------------------

using KernelRow = BinaryKernel[kNumKernelOps];

constexpr int op_index(KernelOp op) { return static_cast<int>(op); }

template <typename T, int kVecBytes>
constexpr void set_float_ops(KernelRow& row) {
  row[op_index(KernelOp::kSum)] = &binary_kernel<T, SumOp, kVecBytes>;
  row[op_index(KernelOp::kProduct)] = &binary_kernel<T, ProductOp, kVecBytes>;
  row[op_index(KernelOp::kMin)] = &binary_kernel<T, MinOp<T>, kVecBytes>;
  row[op_index(KernelOp::kMax)] = &binary_kernel<T, MaxOp<T>, kVecBytes>;
}

template <typename Codec>
constexpr void set_half_ops(KernelRow& row) {
  row[op_index(KernelOp::kSum)] = &half_binary_kernel<Codec, SumOp>;
  row[op_index(KernelOp::kProduct)] = &half_binary_kernel<Codec, ProductOp>;
  row[op_index(KernelOp::kMin)] = &half_binary_kernel<Codec, MinOp<float>>;
  row[op_index(KernelOp::kMax)] = &half_binary_kernel<Codec, MaxOp<float>>;
}

template <typename T, int kVecBytes>
constexpr void set_integer_ops(KernelRow& row) {
  using U = std::make_unsigned_t<T>;  // wrapping arithmetic, same bits
  row[op_index(KernelOp::kSum)] = &binary_kernel<U, SumOp, kVecBytes>;
  row[op_index(KernelOp::kProduct)] = &binary_kernel<U, ProductOp, kVecBytes>;
  row[op_index(KernelOp::kMin)] = &binary_kernel<T, MinOp<T>, kVecBytes>;
  row[op_index(KernelOp::kMax)] = &binary_kernel<T, MaxOp<T>, kVecBytes>;
  row[op_index(KernelOp::kBand)] = &binary_kernel<U, AndOp, kVecBytes>;
  row[op_index(KernelOp::kBor)] = &binary_kernel<U, OrOp, kVecBytes>;
  row[op_index(KernelOp::kBxor)] = &binary_kernel<U, XorOp, kVecBytes>;
}

// bool bytes are 0 or 1, so AND/OR/XOR of the bytes are the logical ops. kernel_op_for maps
// SUM/MAX to kBor and PRODUCT/MIN to kBand; the rows are filled for those too, for safety.
template <int kVecBytes>
constexpr void set_bool_ops(KernelRow& row) {
  row[op_index(KernelOp::kSum)] = &binary_kernel<uint8_t, OrOp, kVecBytes>;
  row[op_index(KernelOp::kProduct)] = &binary_kernel<uint8_t, AndOp, kVecBytes>;
  row[op_index(KernelOp::kMin)] = &binary_kernel<uint8_t, AndOp, kVecBytes>;
  row[op_index(KernelOp::kMax)] = &binary_kernel<uint8_t, OrOp, kVecBytes>;
  row[op_index(KernelOp::kBand)] = &binary_kernel<uint8_t, AndOp, kVecBytes>;
  row[op_index(KernelOp::kBor)] = &binary_kernel<uint8_t, OrOp, kVecBytes>;
  row[op_index(KernelOp::kBxor)] = &binary_kernel<uint8_t, XorOp, kVecBytes>;
}

template <int kVecBytes, typename F16Codec, typename BF16Codec>
constexpr KernelTable make_kernel_table(Isa isa) {
  KernelTable t{};
  t.isa = isa;
  auto row = [&t](DType dtype) -> KernelRow& { return t.binary[static_cast<int>(dtype)]; };
  set_float_ops<float, kVecBytes>(row(DType::kFloat32));
  set_float_ops<double, kVecBytes>(row(DType::kFloat64));
  set_half_ops<F16Codec>(row(DType::kFloat16));
  set_half_ops<BF16Codec>(row(DType::kBFloat16));
  set_integer_ops<int8_t, kVecBytes>(row(DType::kInt8));
  set_integer_ops<uint8_t, kVecBytes>(row(DType::kUInt8));
  set_integer_ops<int16_t, kVecBytes>(row(DType::kInt16));
  set_integer_ops<int32_t, kVecBytes>(row(DType::kInt32));
  set_integer_ops<int64_t, kVecBytes>(row(DType::kInt64));
  set_bool_ops<kVecBytes>(row(DType::kBool));
  t.widen[0] = &widen_kernel<F16Codec>;  // [0] float16, [1] bfloat16 (half_index)
  t.widen[1] = &widen_kernel<BF16Codec>;
  t.narrow[0] = &narrow_kernel<F16Codec>;
  t.narrow[1] = &narrow_kernel<BF16Codec>;
  return t;
}

}  // namespace
}  // namespace weft::reduce
