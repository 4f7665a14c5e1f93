// scale() and divide(): the one-pass ends of AVG and starts of PREMUL_SUM. Plain loops in the
// default instruction set: they run once per collective over one buffer, so the vector
// dispatch of the reducing kernels (which run once per input per step) is not worth it here.
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "reduce/half_convert.h"
#include "reduce/reduce_kernels.h"
#include "weft/error.h"

namespace weft::reduce {
namespace {

template <typename T, typename F>
void for_each_element(void* dst, std::size_t count, F f) {
  T* d = static_cast<T*>(dst);
  for (std::size_t i = 0; i < count; ++i) d[i] = f(d[i]);
}

// For float16/bfloat16 storage: widen, apply f in float32, round once.
template <uint16_t (*Narrow)(float), float (*Widen)(uint16_t), typename F>
void for_each_half(void* dst, std::size_t count, F f) {
  for_each_element<uint16_t>(dst, count, [f](uint16_t h) { return Narrow(f(Widen(h))); });
}

uint16_t narrow_half(float f) { return float_to_half_bits(f); }
float widen_half(uint16_t h) { return half_bits_to_float(h); }
uint16_t narrow_bfloat16(float f) { return float_to_bfloat16_bits(f); }
float widen_bfloat16(uint16_t b) { return bfloat16_bits_to_float(b); }

// Truncating integer division; the quotient's magnitude never exceeds the dividend's, so it
// always fits back into T.
template <typename T>
void divide_integers(void* dst, std::size_t count, std::size_t divisor) {
  if constexpr (std::is_signed_v<T>) {
    const int64_t d = static_cast<int64_t>(divisor);
    for_each_element<T>(dst, count, [d](T x) { return static_cast<T>(int64_t{x} / d); });
  } else {
    const uint64_t d = divisor;
    for_each_element<T>(dst, count, [d](T x) { return static_cast<T>(uint64_t{x} / d); });
  }
}

}  // namespace

void scale(DType dtype, void* dst, std::size_t count, double factor) {
  const float f = static_cast<float>(factor);
  switch (dtype) {
    case DType::kFloat32:
      return for_each_element<float>(dst, count, [f](float x) { return x * f; });
    case DType::kFloat64:
      return for_each_element<double>(dst, count, [factor](double x) { return x * factor; });
    case DType::kFloat16:
      return for_each_half<narrow_half, widen_half>(dst, count, [f](float x) { return x * f; });
    case DType::kBFloat16:
      return for_each_half<narrow_bfloat16, widen_bfloat16>(dst, count,
                                                            [f](float x) { return x * f; });
    default:
      throw Error(ErrorCode::kInvalidArgument,
                  "scale needs a floating-point dtype, got " + std::string(name_of(dtype)));
  }
}

void divide(DType dtype, void* dst, std::size_t count, std::size_t divisor) {
  if (divisor == 0 || divisor > static_cast<std::size_t>(std::numeric_limits<int64_t>::max())) {
    throw Error(ErrorCode::kInvalidArgument,
                "divide: divisor " + std::to_string(divisor) + " is out of range");
  }
  const float f = static_cast<float>(divisor);
  switch (dtype) {
    case DType::kFloat32:
      return for_each_element<float>(dst, count, [f](float x) { return x / f; });
    case DType::kFloat64: {
      const double d = static_cast<double>(divisor);
      return for_each_element<double>(dst, count, [d](double x) { return x / d; });
    }
    case DType::kFloat16:
      return for_each_half<narrow_half, widen_half>(dst, count, [f](float x) { return x / f; });
    case DType::kBFloat16:
      return for_each_half<narrow_bfloat16, widen_bfloat16>(dst, count,
                                                            [f](float x) { return x / f; });
    case DType::kInt8:
      return divide_integers<int8_t>(dst, count, divisor);
    case DType::kUInt8:
      return divide_integers<uint8_t>(dst, count, divisor);
    case DType::kInt16:
      return divide_integers<int16_t>(dst, count, divisor);
    case DType::kInt32:
      return divide_integers<int32_t>(dst, count, divisor);
    case DType::kInt64:
      return divide_integers<int64_t>(dst, count, divisor);
    default:
      throw Error(
          ErrorCode::kInvalidArgument,
          "divide (the end of avg) is not supported for dtype " + std::string(name_of(dtype)));
  }
}

}  // namespace weft::reduce
