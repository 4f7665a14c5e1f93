#include "data_pattern.h"

#include <algorithm>

#include "element_codec.h"

namespace weft_bench {
namespace {

using K = weft::ReduceOp;

constexpr int kMaxRanksWithTwo = 15;  // prod: at most 2^15, exact even in float16

bool and_like(K::Kind kind) { return kind == K::kProduct || kind == K::kMin || kind == K::kBand; }

}  // namespace

DataPattern::DataPattern(weft::DType dtype, bool reducing, weft::ReduceOp::Kind redop,
                         double premul_factor, int world_size, uint64_t salt)
    : dtype_(dtype),
      reducing_(reducing),
      redop_(redop),
      premul_factor_(premul_factor),
      world_size_(world_size),
      salt_(salt) {
  const uint64_t limit = exact_integer_limit(dtype);
  const uint64_t n = static_cast<uint64_t>(std::max(world_size, 1));
  if (!reducing || redop == K::kMin || redop == K::kMax || redop == K::kBand || redop == K::kBor ||
      redop == K::kBxor) {
    modulus_ = std::min<uint64_t>(limit, 65535) + 1;
  } else if (redop == K::kPremulSum) {
    const uint64_t f = static_cast<uint64_t>(std::max(premul_factor, 1.0));
    modulus_ = std::min<uint64_t>(limit / (n * f), 65535) + 1;
  } else {  // sum, avg (prod does not use the modulus)
    modulus_ = std::min<uint64_t>(limit / n, 65535) + 1;
  }
}

uint64_t DataPattern::value(int rank, std::size_t index) const {
  const uint64_t r = static_cast<uint64_t>(rank);
  const uint64_t i = index;
  const uint64_t n = static_cast<uint64_t>(world_size_);
  if (dtype_ == weft::DType::kBool) {
    // Ranks cover n of the n+1 residues, so for each index at most one rank differs from the
    // rest: OR-like ops see mostly 1s with some 0s, AND-like ops the other way round.
    const bool marked = (r + i + salt_) % (n + 1) == 0;
    if (reducing_ && and_like(redop_)) return marked ? 0 : 1;
    if (reducing_) return marked ? 1 : 0;
    return (r * 3 + i + (i >> 3) + salt_) & 1u;
  }
  if (reducing_ && redop_ == K::kProduct) {
    return rank < kMaxRanksWithTwo && (r + i + salt_) % 3 == 0 ? 2 : 1;
  }
  return (r * 131 + i * 7 + (i >> 4) * 3 + salt_ * 17) % modulus_;
}

uint64_t DataPattern::input_bits(int rank, std::size_t index) const {
  return bits_of_integer(dtype_, value(rank, index));
}

uint64_t DataPattern::reduced_bits(std::size_t index) const {
  const int n = world_size_;
  if (dtype_ == weft::DType::kBool) {
    uint64_t acc = value(0, index);
    for (int r = 1; r < n; ++r) {
      const uint64_t v = value(r, index);
      switch (redop_) {
        case K::kProduct:
        case K::kMin:
        case K::kBand:
          acc &= v;
          break;
        case K::kBxor:
          acc ^= v;
          break;
        default:
          acc |= v;  // sum, max, bor
      }
    }
    return acc;
  }
  if (!is_floating(dtype_)) {
    uint64_t acc = value(0, index);  // wraps like two's complement; truncated below
    for (int r = 1; r < n; ++r) {
      const uint64_t v = value(r, index);
      switch (redop_) {
        case K::kProduct:
          acc *= v;
          break;
        case K::kMin:
          acc = std::min(acc, v);
          break;  // values are non-negative
        case K::kMax:
          acc = std::max(acc, v);
          break;
        case K::kBand:
          acc &= v;
          break;
        case K::kBor:
          acc |= v;
          break;
        case K::kBxor:
          acc ^= v;
          break;
        default:
          acc += v;  // sum, avg
      }
    }
    if (redop_ == K::kAvg) acc /= static_cast<uint64_t>(n);  // non-negative: truncation
    return bits_of_integer(dtype_, acc);
  }
  // Floating point: every partial result is an exact integer (or power of two), so doubles
  // hold it exactly; only AVG's final division rounds, in the dtype's own arithmetic.
  const double factor = redop_ == K::kPremulSum ? premul_factor_ : 1.0;
  double acc = static_cast<double>(value(0, index)) * factor;
  for (int r = 1; r < n; ++r) {
    const double v = static_cast<double>(value(r, index)) * factor;
    switch (redop_) {
      case K::kProduct:
        acc *= v;
        break;
      case K::kMin:
        acc = std::min(acc, v);
        break;
      case K::kMax:
        acc = std::max(acc, v);
        break;
      default:
        acc += v;  // sum, avg, premul_sum
    }
  }
  if (redop_ == K::kAvg) {
    if (dtype_ == weft::DType::kFloat64) return bits_of_double(acc / static_cast<double>(n));
    return bits_of_float(dtype_, static_cast<float>(acc) / static_cast<float>(n));
  }
  if (dtype_ == weft::DType::kFloat64) return bits_of_double(acc);
  return bits_of_float(dtype_, static_cast<float>(acc));
}

}  // namespace weft_bench
