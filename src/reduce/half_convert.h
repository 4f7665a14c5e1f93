// Scalar conversions between the 16-bit float storage types (float16, bfloat16) and float32.
//
// Contract: float -> 16-bit rounds to nearest, ties to even, and overflows to infinity like
// IEEE 754; 16-bit -> float is exact. NaN stays NaN: a NaN comes out quiet, keeping the sign
// and the top payload bits (what F16C's vcvtps2ph and vcvtph2ps do, so the scalar and vector
// kernels agree bit for bit). Pure functions, no state: safe from any thread.
//
// Why always_inline: these are used inside the per-ISA translation units (compiled with
// -mavx2 / -mavx512f). An ordinary inline function there would also be emitted as a shared
// COMDAT copy, and the linker may keep the AVX-512-compiled copy for every caller, including
// the scalar path on a CPU without AVX-512. Forcing inlining (GCC honours it even at -O0)
// means no out-of-line copy is ever emitted.
#pragma once

#include <bit>
#include <cstdint>

#include "weft/dtype.h"

namespace weft::reduce {

#define WEFT_REDUCE_FORCE_INLINE [[gnu::always_inline]] inline

// --- float16 -----------------------------------------------------------------------------

WEFT_REDUCE_FORCE_INLINE float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F) {  // infinity, or NaN (made quiet, payload kept)
    const uint32_t quiet = mantissa != 0 ? 0x400000u : 0u;
    return std::bit_cast<float>(sign | 0x7F800000u | quiet | (mantissa << 13));
  }
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24 is exact in float (a normal float).
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  // Normal: rebias the exponent from 15 to 127.
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

WEFT_REDUCE_FORCE_INLINE uint16_t float_to_half_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t magnitude = x & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) {  // NaN: quiet bit set, top 9 payload bits kept
    return static_cast<uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu));
  }
  // 65520 (0x477FF000) is half-way between 65504 (largest half, odd mantissa) and 65536:
  // ties to even round it, and everything above, to infinity.
  if (magnitude >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);
  if (magnitude >= 0x38800000u) {  // result is a normal half (|f| >= 2^-14)
    const uint32_t odd = (magnitude >> 13) & 1u;
    // Rebias 127 -> 15 and add just under half an ulp (plus one when odd: ties to even).
    // A mantissa carry correctly bumps the exponent.
    const uint32_t rounded = magnitude - (112u << 23) + 0xFFFu + odd;
    return static_cast<uint16_t>(sign | (rounded >> 13));
  }
  // Subnormal half or zero: count units of 2^-24, rounding the discarded bits to even.
  const uint32_t exponent = magnitude >> 23;
  const uint32_t shift = 126u - exponent;  // 14 for |f| just below 2^-14
  if (shift > 24) return sign;             // below 2^-25: rounds to zero
  const uint32_t significand = (magnitude & 0x7FFFFFu) | 0x800000u;
  uint32_t units = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1u);
  const uint32_t half_unit = 1u << (shift - 1);
  if (rest > half_unit || (rest == half_unit && (units & 1u))) ++units;
  return static_cast<uint16_t>(sign | units);  // units == 0x400 encodes 2^-14: still right
}

// --- bfloat16 (the top half of a float32) -------------------------------------------------

WEFT_REDUCE_FORCE_INLINE float bfloat16_bits_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

WEFT_REDUCE_FORCE_INLINE uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet
  // Add just under half an ulp, plus one when the kept part is odd (ties to even); a carry
  // into the exponent rounds up correctly, up to infinity.
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

// --- the public storage structs -----------------------------------------------------------

WEFT_REDUCE_FORCE_INLINE float to_float(Half h) { return half_bits_to_float(h.bits); }
WEFT_REDUCE_FORCE_INLINE float to_float(BFloat16 b) { return bfloat16_bits_to_float(b.bits); }
WEFT_REDUCE_FORCE_INLINE Half to_half(float f) { return Half{float_to_half_bits(f)}; }
WEFT_REDUCE_FORCE_INLINE BFloat16 to_bfloat16(float f) {
  return BFloat16{float_to_bfloat16_bits(f)};
}

}  // namespace weft::reduce
