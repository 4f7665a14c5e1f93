// The check's data: values every rank can predict exactly from (rank, index, salt), and the
// reduction of them over all ranks, computed locally (nccl-tests' verifiable data).
//
// Contract: value() is a small non-negative integer chosen so that every reduction of the
// run's op over `world_size` ranks is exact in the dtype:
//   sum, avg     0 .. limit / n            (the sum never passes the exact-integer limit)
//   premul_sum   0 .. limit / (n x factor) (factor 2: each rank's scaled input is exact too)
//   prod         1 or 2, with 2 only on ranks below 15 (2^15 still fits float16)
//   bool         0 or 1, arranged so that OR and AND both give a mix of 0s and 1s
//   others       0 .. min(limit, 65535)
// reduced_bits() mirrors weft's semantics: integers wrap, bool SUM/MAX are OR and PROD/MIN
// are AND, AVG divides the exact sum once at the end (integers truncate; floats divide in
// the dtype's arithmetic, float16/bfloat16 in float32 then rounded to nearest even).
#pragma once

#include <cstddef>
#include <cstdint>

#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft_bench {

class DataPattern {
 public:
  // reducing: the op reduces with `redop`; otherwise the data only moves (redop unused).
  DataPattern(weft::DType dtype, bool reducing, weft::ReduceOp::Kind redop, double premul_factor,
              int world_size, uint64_t salt);

  uint64_t value(int rank, std::size_t index) const;
  // value() as the dtype's bits.
  uint64_t input_bits(int rank, std::size_t index) const;
  // The reduction over ranks 0..world_size-1 of value(rank, index), as the dtype's bits.
  uint64_t reduced_bits(std::size_t index) const;

 private:
  weft::DType dtype_;
  bool reducing_;
  weft::ReduceOp::Kind redop_;
  double premul_factor_;
  int world_size_;
  uint64_t salt_;
  uint64_t modulus_;  // values are in [0, modulus_)
};

}  // namespace weft_bench
