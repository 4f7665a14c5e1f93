// Test data in any dtype: small integers held as doubles, written to and read from buffers of
// every dtype exactly, and the reference reductions computed with plain loops.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "reduce/half_convert.h"
#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft::testing {

inline void store_value(DType dtype, void* base, std::size_t index, double value) {
  switch (dtype) {
    case DType::kFloat32:
      static_cast<float*>(base)[index] = static_cast<float>(value);
      return;
    case DType::kFloat64:
      static_cast<double*>(base)[index] = value;
      return;
    case DType::kFloat16:
      static_cast<uint16_t*>(base)[index] = reduce::float_to_half_bits(static_cast<float>(value));
      return;
    case DType::kBFloat16:
      static_cast<uint16_t*>(base)[index] =
          reduce::float_to_bfloat16_bits(static_cast<float>(value));
      return;
    case DType::kInt8:
      static_cast<int8_t*>(base)[index] = static_cast<int8_t>(static_cast<int64_t>(value));
      return;
    case DType::kUInt8:
      static_cast<uint8_t*>(base)[index] = static_cast<uint8_t>(static_cast<int64_t>(value));
      return;
    case DType::kInt16:
      static_cast<int16_t*>(base)[index] = static_cast<int16_t>(static_cast<int64_t>(value));
      return;
    case DType::kInt32:
      static_cast<int32_t*>(base)[index] = static_cast<int32_t>(static_cast<int64_t>(value));
      return;
    case DType::kInt64:
      static_cast<int64_t*>(base)[index] = static_cast<int64_t>(value);
      return;
    case DType::kBool:
      static_cast<uint8_t*>(base)[index] = value != 0 ? 1 : 0;
      return;
  }
}

inline double load_value(DType dtype, const void* base, std::size_t index) {
  switch (dtype) {
    case DType::kFloat32:
      return static_cast<const float*>(base)[index];
    case DType::kFloat64:
      return static_cast<const double*>(base)[index];
    case DType::kFloat16:
      return reduce::half_bits_to_float(static_cast<const uint16_t*>(base)[index]);
    case DType::kBFloat16:
      return reduce::bfloat16_bits_to_float(static_cast<const uint16_t*>(base)[index]);
    case DType::kInt8:
      return static_cast<const int8_t*>(base)[index];
    case DType::kUInt8:
      return static_cast<const uint8_t*>(base)[index];
    case DType::kInt16:
      return static_cast<const int16_t*>(base)[index];
    case DType::kInt32:
      return static_cast<const int32_t*>(base)[index];
    case DType::kInt64:
      return static_cast<double>(static_cast<const int64_t*>(base)[index]);
    case DType::kBool:
      return static_cast<const uint8_t*>(base)[index] != 0 ? 1 : 0;
  }
  return NAN;
}

inline bool is_float(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kFloat16 ||
         dtype == DType::kBFloat16;
}

// The value rank `rank` contributes at `index` for `op`: chosen so every reduction of up to
// 8 ranks is exact in every dtype (no overflow, no rounding).
inline double input_value(ReduceOp::Kind op, DType dtype, int seed, int rank, std::size_t index,
                          int world) {
  if (dtype == DType::kBool) return (seed + rank + index) % 3 == 0 ? 1 : 0;
  switch (op) {
    case ReduceOp::kProduct:
      return 1 + (seed + rank * 3 + index) % 2;  // at most 2^8
    case ReduceOp::kAvg:
      return world * static_cast<double>((seed + index) % 2);  // sum divides, fits int8
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      return static_cast<double>((seed * 7 + rank * 13 + index * 5) % 64);
    default: {
      double value = static_cast<double>((seed * 11 + rank * 7 + index * 3) % 13);
      bool is_signed = dtype != DType::kUInt8;
      return is_signed && (rank + index) % 2 ? -value : value;
    }
  }
}

// Wraps an integer result the way the dtype stores it.
inline double wrap(DType dtype, double value) {
  std::vector<uint8_t> cell(8);
  store_value(dtype, cell.data(), 0, value);
  return load_value(dtype, cell.data(), 0);
}

inline double reference_reduce(ReduceOp op, DType dtype, const std::vector<double>& values) {
  if (dtype == DType::kBool) {
    bool any = false, all = true, parity = false;
    for (double v : values) {
      any = any || v != 0;
      all = all && v != 0;
      parity = parity != (v != 0);
    }
    switch (op.kind) {
      case ReduceOp::kSum:
      case ReduceOp::kMax:
      case ReduceOp::kBor:
        return any;
      case ReduceOp::kProduct:
      case ReduceOp::kMin:
      case ReduceOp::kBand:
        return all;
      case ReduceOp::kBxor:
        return parity;
      default:
        return NAN;
    }
  }
  double result = values[0];
  int64_t bits = static_cast<int64_t>(values[0]);
  for (std::size_t r = 1; r < values.size(); ++r) {
    double v = values[r];
    switch (op.kind) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
      case ReduceOp::kPremulSum:
        result += v;
        break;
      case ReduceOp::kProduct:
        result *= v;
        break;
      case ReduceOp::kMin:
        result = std::min(result, v);
        break;
      case ReduceOp::kMax:
        result = std::max(result, v);
        break;
      case ReduceOp::kBand:
        bits &= static_cast<int64_t>(v);
        break;
      case ReduceOp::kBor:
        bits |= static_cast<int64_t>(v);
        break;
      case ReduceOp::kBxor:
        bits ^= static_cast<int64_t>(v);
        break;
    }
  }
  if (op.kind == ReduceOp::kBand || op.kind == ReduceOp::kBor || op.kind == ReduceOp::kBxor) {
    result = static_cast<double>(bits);
  }
  if (op.kind == ReduceOp::kPremulSum) result *= op.factor;
  if (op.kind == ReduceOp::kAvg) {
    result = is_float(dtype) ? result / values.size()
                             : std::trunc(result / static_cast<double>(values.size()));
  }
  return wrap(dtype, result);
}

inline std::vector<ReduceOp::Kind> ops_for(DType dtype) {
  if (dtype == DType::kBool) {
    return {ReduceOp::kSum,  ReduceOp::kProduct, ReduceOp::kMin, ReduceOp::kMax,
            ReduceOp::kBand, ReduceOp::kBor,     ReduceOp::kBxor};
  }
  if (is_float(dtype)) {
    return {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin,
            ReduceOp::kMax, ReduceOp::kAvg,     ReduceOp::kPremulSum};
  }
  return {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin, ReduceOp::kMax,
          ReduceOp::kAvg, ReduceOp::kBand,    ReduceOp::kBor, ReduceOp::kBxor};
}

inline std::vector<DType> all_dtypes() {
  return {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt8,
          DType::kUInt8,   DType::kInt16,   DType::kInt32,   DType::kInt64,    DType::kBool};
}

}  // namespace weft::testing
