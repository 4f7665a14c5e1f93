// Recursive-doubling all-reduce: log2(p) rounds in which partners swap their whole buffers and
// both reduce, for small messages where latency dominates.
//
// What: every rank's `data` (count elements of dtype) is replaced, in place, by the element-wise
// reduction over all ranks with `op`, applied as given (AVG and PREMUL_SUM reduce as SUM; the
// caller divides or pre-scales). All ranks end bit-identical: partners reduce the same two
// inputs and every op is commutative.
//
// Phases (schedule in coll/patterns/recursive_doubling.h, pof2 = largest power of two <= p):
// 1. Fold (p not a power of two): rank r >= pof2 sends its data to r - pof2, which reduces it.
// 2. Rounds k = 0 .. log2(pof2)-1: rank v swaps data with v ^ 2^k and reduces what it gets.
// 3. Unfold: rank r < p - pof2 sends the result to r + pof2.
// Each reduction combines exactly two inputs, so float16/bfloat16 round once per round (up to
// log2(p) + 1 roundings), unlike naive_all_reduce's single rounding.
//
// Cost: log2(pof2) (alpha + n beta), plus 2 (alpha + n beta) when p is not a power of two;
// n bytes of reduction per round. Scratch: n bytes (none on the extra ranks).
//
// Supports any world size >= 1 (1: no-op) and any count >= 0. Not thread-safe: runs on the
// call's thread; `data` must stay valid for the call.
#pragma once

#include <cstddef>

#include "coll/collective_call.h"
#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft::coll {

void recursive_doubling_all_reduce(CollectiveCall& call, void* data, std::size_t count, DType dtype,
                                   ReduceOp op);

}  // namespace weft::coll
