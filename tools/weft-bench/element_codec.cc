#include "element_codec.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace weft_bench {

static_assert(std::endian::native == std::endian::little,
              "store_bits/load_bits copy the low bytes of a uint64_t");

namespace {

using weft::DType;

uint16_t float_to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t magnitude = x & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);  // NaN
  const float a = std::bit_cast<float>(magnitude);
  if (a >= 65520.0f) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to infinity
  if (a < 0x1p-14f) {
    // Subnormal half: a count of 2^-24 units; nearbyint rounds to nearest even.
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(a * 0x1p24f)));
  }
  // Normal: keep 10 of the 23 mantissa bits, rounding the other 13 to nearest even. A carry
  // out of the mantissa correctly bumps the exponent.
  const uint32_t rounded = magnitude + 0xFFFu + ((magnitude >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - (112u << 23)) >> 13));
}

uint16_t float_to_bfloat16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  if (exponent == 0) {
    const float m = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -m : m;
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

}  // namespace

bool is_floating(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kFloat16 ||
         dtype == DType::kBFloat16;
}

uint64_t exact_integer_limit(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return 1;
    case DType::kInt8:
      return 127;
    case DType::kUInt8:
      return 255;
    case DType::kInt16:
      return 32767;
    case DType::kFloat16:
      return 2048;
    case DType::kBFloat16:
      return 256;
    case DType::kFloat32:
      return 1u << 24;
    case DType::kInt32:
    case DType::kInt64:
    case DType::kFloat64:
      return 0x7FFFFFFF;
  }
  return 1;
}

uint64_t bits_of_integer(DType dtype, uint64_t value) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16:
      return bits_of_float(dtype, static_cast<float>(static_cast<int64_t>(value)));
    case DType::kFloat64:
      return bits_of_double(static_cast<double>(static_cast<int64_t>(value)));
    case DType::kBool:
      return value != 0 ? 1 : 0;
    case DType::kInt8:
    case DType::kUInt8:
      return value & 0xFFu;
    case DType::kInt16:
      return value & 0xFFFFu;
    case DType::kInt32:
      return value & 0xFFFFFFFFu;
    case DType::kInt64:
      return value;
  }
  return value;
}

uint64_t bits_of_float(DType dtype, float value) {
  switch (dtype) {
    case DType::kFloat16:
      return float_to_half(value);
    case DType::kBFloat16:
      return float_to_bfloat16(value);
    case DType::kFloat64:
      return bits_of_double(value);
    default:
      return std::bit_cast<uint32_t>(value);
  }
}

uint64_t bits_of_double(double value) { return std::bit_cast<uint64_t>(value); }

void store_bits(DType dtype, void* base, std::size_t index, uint64_t bits) {
  const std::size_t width = weft::size_of(dtype);
  std::memcpy(static_cast<unsigned char*>(base) + index * width, &bits, width);
}

uint64_t load_bits(DType dtype, const void* base, std::size_t index) {
  const std::size_t width = weft::size_of(dtype);
  uint64_t bits = 0;
  std::memcpy(&bits, static_cast<const unsigned char*>(base) + index * width, width);
  return bits;
}

std::string render_bits(DType dtype, uint64_t bits) {
  char text[64];
  switch (dtype) {
    case DType::kFloat32:
      std::snprintf(text, sizeof text, "%.9g", std::bit_cast<float>(static_cast<uint32_t>(bits)));
      break;
    case DType::kFloat64:
      std::snprintf(text, sizeof text, "%.17g", std::bit_cast<double>(bits));
      break;
    case DType::kFloat16:
      std::snprintf(text, sizeof text, "%.6g (0x%04x)", half_to_float(static_cast<uint16_t>(bits)),
                    static_cast<unsigned>(bits));
      break;
    case DType::kBFloat16:
      std::snprintf(text, sizeof text, "%.6g (0x%04x)",
                    std::bit_cast<float>(static_cast<uint32_t>(bits) << 16),
                    static_cast<unsigned>(bits));
      break;
    case DType::kInt8:
      std::snprintf(text, sizeof text, "%d", static_cast<int8_t>(bits));
      break;
    case DType::kInt16:
      std::snprintf(text, sizeof text, "%d", static_cast<int16_t>(bits));
      break;
    case DType::kInt32:
      std::snprintf(text, sizeof text, "%d", static_cast<int32_t>(bits));
      break;
    case DType::kInt64:
      std::snprintf(text, sizeof text, "%lld", static_cast<long long>(bits));
      break;
    default:
      std::snprintf(text, sizeof text, "%llu", static_cast<unsigned long long>(bits));
  }
  return text;
}

}  // namespace weft_bench
