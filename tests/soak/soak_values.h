// Element values for the soak: inputs any rank can recompute from a key, the plain-loop
// reference of every reduction, and the comparison of a result against that reference.
//
// Integers wrap (two's complement, as weft's kernels): their references are exact whatever the
// order of the reduction. Float inputs are multiples of 1/16 within [-4, 4] (or, for products,
// a few factors within [-2, 2]), exactly representable in all four float dtypes; references are
// computed in double and a result may differ by what rounding after each partial reduction
// allows: (contributors + 3) x unit roundoff x the sum of the magnitudes of the terms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft::soak {

using Bytes = std::vector<unsigned char>;

enum class ValueRange {
  kWide,     // integers: any bits; floats: multiples of 1/16 in [-4, 4]
  kFactors,  // floats: factors whose product over a group stays far from overflow
};

// Bytes per element. Not weft::size_of: that inline function calls weft::throw_unknown_dtype,
// which libweft.so does not export, so a program linked against the shared library cannot use
// it (NOTE(soak): reported with the soak's findings).
std::size_t width_of(DType dtype);
bool is_float(DType dtype);
bool is_bitwise(ReduceOp::Kind kind);
// The reduce ops weft defines for this dtype (PREMUL_SUM with factor 1 as a placeholder).
std::vector<ReduceOp::Kind> valid_ops(DType dtype);

// Element i is a function of (key, i) only.
Bytes make_values(DType dtype, ValueRange range, uint64_t key, std::size_t count);
// A buffer of `count` elements, every byte `fill` (to see what an op must leave alone).
Bytes make_filled(DType dtype, std::size_t count, unsigned char fill);

struct Expected {
  DType dtype = DType::kUInt8;
  std::size_t count = 0;
  Bytes exact;                    // integer and bool dtypes, and data that was only moved
  std::vector<double> value;      // float reductions
  std::vector<double> tolerance;  // float reductions: the allowed |result - value|
};

// What a buffer that was moved, not reduced, must hold: these bytes exactly.
Expected exact_bytes(DType dtype, Bytes bytes);

// The sequential definition of a reduction: add() each contributor's input in any order,
// then finish().
class ReferenceReduction {
 public:
  ReferenceReduction(DType dtype, ReduceOp op, std::size_t count);
  void add(const Bytes& input);
  Expected finish();

 private:
  void add_float(const Bytes& input);
  void add_integer(const Bytes& input);

  DType dtype_;
  ReduceOp op_;
  std::size_t count_;
  int contributors_ = 0;
  std::vector<double> acc_;         // floats
  std::vector<double> magnitudes_;  // floats: sum of |term|
  Bytes exact_;                     // integers and bool
};

struct Difference {
  std::size_t index = 0;
  std::string expected;
  std::string got;
};

// The first element of `got` (count elements) that the expectation does not allow.
std::optional<Difference> first_difference(const Expected& expected, const void* got,
                                           std::size_t count);

}  // namespace weft::soak
