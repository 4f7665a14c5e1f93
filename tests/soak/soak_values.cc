// Inputs, references and comparisons of the soak (soak_values.h). The 16-bit float formats are
// encoded and decoded here from their definitions, not with weft's converters, so that a
// conversion bug in weft cannot hide in the reference.
#include "soak_values.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "soak_random.h"

namespace weft::soak {
namespace {

template <typename F>
void with_integer_type(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kInt8:
      return f(int8_t{});
    case DType::kUInt8:
      return f(uint8_t{});
    case DType::kInt16:
      return f(int16_t{});
    case DType::kInt32:
      return f(int32_t{});
    case DType::kInt64:
      return f(int64_t{});
    default:
      throw std::logic_error("soak: not an integer dtype: " + std::string(name_of(dtype)));
  }
}

double unit_roundoff(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return std::ldexp(1.0, -24);
    case DType::kFloat64:
      return std::ldexp(1.0, -53);
    case DType::kFloat16:
      return std::ldexp(1.0, -11);
    default:  // bfloat16
      return std::ldexp(1.0, -8);
  }
}

uint32_t float_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

float bits_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// IEEE binary16: 1 sign bit, 5 exponent bits (bias 15), 10 fraction bits.
double half_to_double(uint16_t h) {
  const double sign = (h & 0x8000u) ? -1.0 : 1.0;
  const int exponent = (h >> 10) & 0x1f;
  const int fraction = h & 0x3ff;
  if (exponent == 0x1f) return fraction ? std::nan("") : sign * INFINITY;
  if (exponent == 0) return sign * std::ldexp(fraction, -24);
  return sign * std::ldexp(1024 + fraction, exponent - 25);
}

// Only for values binary16 holds exactly (the inputs): zero or normal, no rounding needed.
uint16_t exact_double_to_half(double x) {
  if (x == 0) return 0;
  int exponent;
  const double mantissa = std::frexp(std::fabs(x), &exponent);  // in [0.5, 1)
  const auto fraction = static_cast<uint16_t>(std::lround(mantissa * 2048) - 1024);
  const auto biased = static_cast<uint16_t>(exponent - 1 + 15);
  return static_cast<uint16_t>((x < 0 ? 0x8000u : 0u) | (biased << 10) | fraction);
}

double bfloat16_to_double(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

uint16_t exact_double_to_bfloat16(double x) {
  return static_cast<uint16_t>(float_bits(static_cast<float>(x)) >> 16);
}

double read_float(DType dtype, const void* data, std::size_t i) {
  switch (dtype) {
    case DType::kFloat32:
      return static_cast<const float*>(data)[i];
    case DType::kFloat64:
      return static_cast<const double*>(data)[i];
    case DType::kFloat16:
      return half_to_double(static_cast<const uint16_t*>(data)[i]);
    default:
      return bfloat16_to_double(static_cast<const uint16_t*>(data)[i]);
  }
}

void write_exact_float(DType dtype, void* data, std::size_t i, double x) {
  switch (dtype) {
    case DType::kFloat32:
      static_cast<float*>(data)[i] = static_cast<float>(x);
      return;
    case DType::kFloat64:
      static_cast<double*>(data)[i] = x;
      return;
    case DType::kFloat16:
      static_cast<uint16_t*>(data)[i] = exact_double_to_half(x);
      return;
    default:
      static_cast<uint16_t*>(data)[i] = exact_double_to_bfloat16(x);
  }
}

double float_value(ValueRange range, uint64_t bits) {
  static constexpr double kFactors[] = {-2,  -1.5, -1.25, -1,   -0.75, -0.5,
                                        0.5, 0.75, 1,     1.25, 1.5,   2};
  if (range == ValueRange::kFactors) return kFactors[bits % 12];
  return (static_cast<double>(bits % 129) - 64) / 16;
}

std::string format_element(DType dtype, const void* data, std::size_t i) {
  char text[96];
  if (is_float(dtype)) {
    std::snprintf(text, sizeof text, "%.9g", read_float(dtype, data, i));
  } else if (dtype == DType::kBool) {
    std::snprintf(text, sizeof text, "%u", static_cast<const unsigned char*>(data)[i]);
  } else {
    with_integer_type(dtype, [&](auto zero) {
      using T = decltype(zero);
      const T v = static_cast<const T*>(data)[i];
      if constexpr (std::is_signed_v<T>) {
        std::snprintf(text, sizeof text, "%lld", static_cast<long long>(v));
      } else {
        std::snprintf(text, sizeof text, "%llu", static_cast<unsigned long long>(v));
      }
    });
  }
  return text;
}

// Wrapping arithmetic in T's unsigned twin: the bits two's complement hardware produces.
template <typename T>
T combine_integers(ReduceOp::Kind kind, T a, T b) {
  using U = std::make_unsigned_t<T>;
  switch (kind) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return static_cast<T>(static_cast<U>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)));
    case ReduceOp::kProduct:
      return static_cast<T>(static_cast<U>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)));
    case ReduceOp::kMin:
      return std::min(a, b);
    case ReduceOp::kMax:
      return std::max(a, b);
    case ReduceOp::kBand:
      return static_cast<T>(static_cast<U>(a) & static_cast<U>(b));
    case ReduceOp::kBor:
      return static_cast<T>(static_cast<U>(a) | static_cast<U>(b));
    default:  // kBxor
      return static_cast<T>(static_cast<U>(a) ^ static_cast<U>(b));
  }
}

unsigned char combine_bools(ReduceOp::Kind kind, unsigned char a, unsigned char b) {
  switch (kind) {
    case ReduceOp::kProduct:
    case ReduceOp::kMin:
    case ReduceOp::kBand:
      return a & b;
    case ReduceOp::kBxor:
      return a ^ b;
    default:  // sum, max, bor: logical or
      return a | b;
  }
}

}  // namespace

std::size_t width_of(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16:
      return 2;
    default:
      return 1;
  }
}

bool is_float(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kFloat16 ||
         dtype == DType::kBFloat16;
}

bool is_bitwise(ReduceOp::Kind kind) {
  return kind == ReduceOp::kBand || kind == ReduceOp::kBor || kind == ReduceOp::kBxor;
}

std::vector<ReduceOp::Kind> valid_ops(DType dtype) {
  if (is_float(dtype)) {
    return {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin,
            ReduceOp::kMax, ReduceOp::kAvg,     ReduceOp::kPremulSum};
  }
  if (dtype == DType::kBool) {
    return {ReduceOp::kSum,  ReduceOp::kProduct, ReduceOp::kMin, ReduceOp::kMax,
            ReduceOp::kBand, ReduceOp::kBor,     ReduceOp::kBxor};
  }
  return {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin, ReduceOp::kMax,
          ReduceOp::kAvg, ReduceOp::kBand,    ReduceOp::kBor, ReduceOp::kBxor};
}

Bytes make_values(DType dtype, ValueRange range, uint64_t key, std::size_t count) {
  Bytes bytes(count * width_of(dtype));
  void* data = bytes.data();
  if (is_float(dtype)) {
    for (std::size_t i = 0; i < count; ++i) {
      write_exact_float(dtype, data, i, float_value(range, element_bits(key, i)));
    }
  } else if (dtype == DType::kBool) {
    for (std::size_t i = 0; i < count; ++i) bytes[i] = element_bits(key, i) & 1;
  } else {
    with_integer_type(dtype, [&](auto zero) {
      using T = decltype(zero);
      T* out = static_cast<T*>(data);
      for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<T>(element_bits(key, i));
    });
  }
  return bytes;
}

Bytes make_filled(DType dtype, std::size_t count, unsigned char fill) {
  return Bytes(count * width_of(dtype), fill);
}

Expected exact_bytes(DType dtype, Bytes bytes) {
  Expected e;
  e.dtype = dtype;
  e.count = bytes.size() / width_of(dtype);
  e.exact = std::move(bytes);
  return e;
}

ReferenceReduction::ReferenceReduction(DType dtype, ReduceOp op, std::size_t count)
    : dtype_(dtype), op_(op), count_(count) {
  if (is_float(dtype)) {
    acc_.assign(count, 0.0);
    magnitudes_.assign(count, 0.0);
  } else {
    exact_.assign(count * width_of(dtype), 0);
  }
}

void ReferenceReduction::add(const Bytes& input) {
  if (is_float(dtype_)) {
    add_float(input);
  } else if (contributors_ == 0) {
    exact_ = input;
  } else {
    add_integer(input);
  }
  ++contributors_;
}

void ReferenceReduction::add_float(const Bytes& input) {
  const bool first = contributors_ == 0;
  for (std::size_t i = 0; i < count_; ++i) {
    double x = read_float(dtype_, input.data(), i);
    if (op_.kind == ReduceOp::kPremulSum) x *= op_.factor;
    double& acc = acc_[i];
    switch (op_.kind) {
      case ReduceOp::kProduct:
        acc = first ? x : acc * x;
        break;
      case ReduceOp::kMin:
        acc = first ? x : std::min(acc, x);
        break;
      case ReduceOp::kMax:
        acc = first ? x : std::max(acc, x);
        break;
      default:  // sum, avg, premul_sum
        acc += x;
        magnitudes_[i] += std::fabs(x);
    }
  }
}

void ReferenceReduction::add_integer(const Bytes& input) {
  if (dtype_ == DType::kBool) {
    for (std::size_t i = 0; i < count_; ++i)
      exact_[i] = combine_bools(op_.kind, exact_[i], input[i]);
    return;
  }
  with_integer_type(dtype_, [&](auto zero) {
    using T = decltype(zero);
    T* acc = reinterpret_cast<T*>(exact_.data());
    const T* in = reinterpret_cast<const T*>(input.data());
    for (std::size_t i = 0; i < count_; ++i) acc[i] = combine_integers(op_.kind, acc[i], in[i]);
  });
}

Expected ReferenceReduction::finish() {
  Expected e;
  e.dtype = dtype_;
  e.count = count_;
  const double n = contributors_;
  if (!is_float(dtype_)) {
    if (op_.kind == ReduceOp::kAvg) {
      with_integer_type(dtype_, [&](auto zero) {
        using T = decltype(zero);
        T* acc = reinterpret_cast<T*>(exact_.data());
        for (std::size_t i = 0; i < count_; ++i)
          acc[i] = static_cast<T>(acc[i] / static_cast<T>(contributors_));
      });
    }
    e.exact = std::move(exact_);
    return e;
  }
  const double slack = (n + 3) * unit_roundoff(dtype_);
  e.value = std::move(acc_);
  e.tolerance.assign(count_, 0.0);
  for (std::size_t i = 0; i < count_; ++i) {
    switch (op_.kind) {
      case ReduceOp::kMin:
      case ReduceOp::kMax:
        break;  // a comparison never rounds
      case ReduceOp::kProduct:
        e.tolerance[i] = slack * std::fabs(e.value[i]);
        break;
      case ReduceOp::kAvg:
        e.value[i] /= n;
        e.tolerance[i] = slack * magnitudes_[i] / n;
        break;
      default:
        e.tolerance[i] = slack * magnitudes_[i];
    }
  }
  return e;
}

std::optional<Difference> first_difference(const Expected& expected, const void* got,
                                           std::size_t count) {
  if (count != expected.count) {
    return Difference{0, std::to_string(expected.count) + " elements",
                      std::to_string(count) + " elements"};
  }
  const std::size_t width = width_of(expected.dtype);
  const auto* bytes = static_cast<const unsigned char*>(got);
  for (std::size_t i = 0; i < count; ++i) {
    bool right;
    std::string want;
    if (!expected.exact.empty() || expected.value.empty()) {
      right = std::memcmp(bytes + i * width, expected.exact.data() + i * width, width) == 0;
      if (!right) want = format_element(expected.dtype, expected.exact.data(), i);
    } else {
      const double g = read_float(expected.dtype, got, i);
      right = std::fabs(g - expected.value[i]) <= expected.tolerance[i];
      if (!right) {
        char text[96];
        std::snprintf(text, sizeof text, "%.9g (+-%.3g)", expected.value[i], expected.tolerance[i]);
        want = text;
      }
    }
    if (!right) return Difference{i, want, format_element(expected.dtype, got, i)};
  }
  return std::nullopt;
}

}  // namespace weft::soak
