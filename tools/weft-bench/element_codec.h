// Elements of every weft dtype as raw bits: what the check writes and compares.
//
// Contract: pure functions. An element travels as a uint64_t holding its bits in the low
// size_of(dtype) bytes. Conversions to float16 and bfloat16 round to nearest, ties to even,
// as weft's kernels do; integers wrap to their width (two's complement). The bench's own
// copy: tools use only the public API (include/weft), never src/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "weft/dtype.h"

namespace weft_bench {

bool is_floating(weft::DType dtype);

// The largest integer N such that 0..N are all exact in dtype (1 for bool; capped at 2^31 - 1
// for the wide types, plenty for the check's values).
uint64_t exact_integer_limit(weft::DType dtype);

// An integer (wrapped to the dtype's width for integer dtypes; exact for floats within
// exact_integer_limit) as the dtype's bits.
uint64_t bits_of_integer(weft::DType dtype, uint64_t value);
// A float32 value as float32, float16 or bfloat16 bits (rounded to nearest even).
uint64_t bits_of_float(weft::DType dtype, float value);
uint64_t bits_of_double(double value);  // float64

void store_bits(weft::DType dtype, void* base, std::size_t index, uint64_t bits);
uint64_t load_bits(weft::DType dtype, const void* base, std::size_t index);

// "3", "1.5", "0x7e00 (nan)": for mismatch messages.
std::string render_bits(weft::DType dtype, uint64_t bits);

}  // namespace weft_bench
