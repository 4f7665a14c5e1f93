// Naive all-reduce (seed 004's first version): every rank sends its data to rank 0, rank 0
// reduces all of it, and sends the result back to everyone. The baseline the other algorithms
// must beat, and the most accurate one for float16/bfloat16 (one reduction, in rank order).
//
// What: every rank's `data` (count elements of dtype) is replaced, in place, by the element-wise
// reduction over all ranks with `op`, applied as given (AVG and PREMUL_SUM reduce as SUM; the
// caller divides or pre-scales). All ranks end bit-identical (rank 0's result is copied).
//
// Phases:
// 1. Gather and reduce, in segments of call.segment_bytes(): ranks 1..p-1 send segment j;
//    rank 0 receives segment j from all of them (segment j+1's receives are posted before
//    segment j is reduced) and reduces the p inputs at once with reduce::reduce_many, so
//    float16/bfloat16 accumulate in float32 and round once.
// 2. Rank 0 sends the whole result to each other rank.
//
// Cost: rank 0 receives and sends (p-1) n bytes: about 2(p-1)(alpha + n beta) on rank 0's
// links, (p-1) n bytes of reduction on rank 0. Scratch on rank 0: 2 (p-1) segments.
//
// Supports any world size >= 1 (1: no-op) and any count >= 0. Not thread-safe: runs on the
// call's thread; `data` must stay valid for the call.
#pragma once

#include <cstddef>

#include "coll/collective_call.h"
#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft::coll {

void naive_all_reduce(CollectiveCall& call, void* data, std::size_t count, DType dtype,
                      ReduceOp op);

}  // namespace weft::coll
