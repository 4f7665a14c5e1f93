// half_convert.h against independent oracles: GCC's _Float16 (libgcc's correctly rounded
// conversion) for float16, and an exact nearest-candidate search in double for bfloat16.
#include "reduce/half_convert.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace weft::reduce {
namespace {

bool is_half_nan(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }
bool is_bfloat16_nan(uint16_t b) { return (b & 0x7F80u) == 0x7F80u && (b & 0x7Fu) != 0; }

// Float bit patterns around every rounding boundary of a format whose kept part ends at bit
// `drop` (13 for float16 normals, 16 for bfloat16): exact, just above, ties, just below.
std::vector<uint32_t> boundary_floats(int drop) {
  const uint32_t unit = 1u << drop;
  const uint32_t half = unit / 2;
  std::vector<uint32_t> out;
  for (uint64_t base = 0; base < (uint64_t{1} << 32); base += unit) {
    const uint32_t b = static_cast<uint32_t>(base);
    for (uint32_t delta : {0u, 1u, half - 1, half, half + 1, unit - 1}) out.push_back(b + delta);
  }
  return out;
}

// Floats whose float16 result is subnormal, including exact ties at every bit position.
std::vector<uint32_t> subnormal_half_floats() {
  std::mt19937 rng(7);
  std::vector<uint32_t> out;
  for (uint32_t exponent = 98; exponent <= 112; ++exponent) {
    const uint32_t shift = 126 - exponent;
    for (int i = 0; i < 2000; ++i) {
      uint32_t significand = (rng() & 0x7FFFFFu) | 0x800000u;
      if (shift <= 24) {
        significand &= ~((1u << shift) - 1u);
        significand |= 1u << (shift - 1);  // an exact tie
        significand |= 0x800000u;
      }
      for (int d : {-1, 0, 1}) {
        const uint32_t bits = (exponent << 23) | ((significand + d) & 0x7FFFFFu);
        out.push_back(bits);
        out.push_back(bits | 0x80000000u);
      }
    }
  }
  return out;
}

uint16_t oracle_half(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }

// The bfloat16 nearest to f, ties to even, found by comparing exact distances in double.
uint16_t oracle_bfloat16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = x & 0x80000000u;
  const uint32_t magnitude = x & 0x7FFFFFFFu;
  if (magnitude >= 0x7F800000u) return static_cast<uint16_t>(x >> 16);  // inf (NaN not used)
  const uint32_t low = magnitude >> 16;
  const uint32_t high = low + 1;  // 0x7F80 is infinity: treat it as 2^128 for the distance
  const double value = std::fabs(static_cast<double>(f));
  const double low_value = std::bit_cast<float>(low << 16);
  const double high_value =
      high == 0x7F80u ? std::ldexp(1.0, 128) : std::bit_cast<float>(high << 16);
  const double below = value - low_value;
  const double above = high_value - value;
  const uint32_t pick = below < above ? low : above < below ? high : (low & 1u) ? high : low;
  return static_cast<uint16_t>((sign >> 16) | pick);
}

TEST(HalfConvert, Float16WidenMatchesFloat16Type) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float got = half_bits_to_float(static_cast<uint16_t>(h));
    const float want = static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(h)));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << h;
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << std::hex << h;
    }
  }
}

TEST(HalfConvert, Float16RoundTripsEveryPattern) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t back = float_to_half_bits(half_bits_to_float(static_cast<uint16_t>(h)));
    if (is_half_nan(static_cast<uint16_t>(h))) {
      ASSERT_TRUE(is_half_nan(back)) << std::hex << h;
      ASSERT_EQ(back & 0x8000u, h & 0x8000u) << "sign of NaN " << std::hex << h;
    } else {
      ASSERT_EQ(back, h);
    }
  }
}

TEST(HalfConvert, Float16NarrowRoundsToNearestEven) {
  std::vector<uint32_t> cases = boundary_floats(13);
  const std::vector<uint32_t> subnormal = subnormal_half_floats();
  cases.insert(cases.end(), subnormal.begin(), subnormal.end());
  for (uint32_t bits : cases) {
    const float f = std::bit_cast<float>(bits);
    if (std::isnan(f)) {
      ASSERT_TRUE(is_half_nan(float_to_half_bits(f))) << std::hex << bits;
    } else {
      ASSERT_EQ(float_to_half_bits(f), oracle_half(f)) << std::hex << bits << " " << f;
    }
  }
}

TEST(HalfConvert, BFloat16WidenIsExact) {
  for (uint32_t b = 0; b < 65536; ++b) {
    ASSERT_EQ(std::bit_cast<uint32_t>(bfloat16_bits_to_float(static_cast<uint16_t>(b))), b << 16);
  }
}

TEST(HalfConvert, BFloat16RoundTripsEveryPattern) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t back = float_to_bfloat16_bits(bfloat16_bits_to_float(static_cast<uint16_t>(b)));
    if (is_bfloat16_nan(static_cast<uint16_t>(b))) {
      ASSERT_TRUE(is_bfloat16_nan(back)) << std::hex << b;
    } else {
      ASSERT_EQ(back, b);
    }
  }
}

TEST(HalfConvert, BFloat16NarrowRoundsToNearestEven) {
  for (uint32_t bits : boundary_floats(16)) {
    const float f = std::bit_cast<float>(bits);
    if (std::isnan(f)) {
      ASSERT_TRUE(is_bfloat16_nan(float_to_bfloat16_bits(f))) << std::hex << bits;
    } else {
      ASSERT_EQ(float_to_bfloat16_bits(f), oracle_bfloat16(f)) << std::hex << bits << " " << f;
    }
  }
}

TEST(HalfConvert, StructWrappers) {
  EXPECT_EQ(to_float(to_half(1.5f)), 1.5f);
  EXPECT_EQ(to_float(to_bfloat16(-2.25f)), -2.25f);
  EXPECT_EQ(to_half(65520.0f).bits, 0x7C00u);            // the tie above the largest half: infinity
  EXPECT_EQ(to_bfloat16(1.0f + 0x1p-8f).bits, 0x3F80u);  // tie to even, down
}

}  // namespace
}  // namespace weft::reduce
