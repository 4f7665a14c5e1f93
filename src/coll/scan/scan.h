// Inclusive and exclusive prefix reductions (MPI_Scan, MPI_Exscan) by recursive doubling.
//
// What: with x_r the `input` of rank r (count elements of dtype),
// - inclusive_scan leaves x_0 op x_1 op ... op x_r in rank r's `output`;
// - exclusive_scan leaves x_0 op ... op x_(r-1) in rank r's `output` for r >= 1, and does not
//   touch rank 0's `output` at all (MPI says it is undefined there; weft leaves it as it was).
// `op` is applied as given (AVG and PREMUL_SUM reduce as SUM; the caller divides or
// pre-scales). `output` may be `input` exactly (in place); any other overlap is an error.
// `input` is only read.
//
// Rounds k = 0 .. ceil(log2 p)-1 (as MPICH's MPIR_Scan_intra_recursive_doubling): rank r swaps
// its running total of a contiguous range of ranks with partner r ^ 2^k (when the partner
// exists), folds the partner's total into its running total, and, when the partner is lower,
// also into its result. Each reduction combines exactly two inputs (float16/bfloat16 round once
// per round). Every op here is commutative, so operand order does not matter.
//
// Cost: ceil(log2 p)(alpha + n beta); up to 2n bytes of reduction per round. Scratch: 2n bytes.
//
// Supports any world size >= 1 (1: output = input, or untouched for exscan) and any
// count >= 0. Not thread-safe: runs on the call's thread; buffers must stay valid for the call.
#pragma once

#include <cstddef>

#include "coll/collective_call.h"
#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft::coll {

void inclusive_scan(CollectiveCall& call, const void* input, void* output, std::size_t count,
                    DType dtype, ReduceOp op);

void exclusive_scan(CollectiveCall& call, const void* input, void* output, std::size_t count,
                    DType dtype, ReduceOp op);

}  // namespace weft::coll
