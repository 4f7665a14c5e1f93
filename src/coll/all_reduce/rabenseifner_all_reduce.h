// Rabenseifner's all-reduce: a reduce-scatter by recursive halving, then an all-gather by
// recursive doubling, for mid-size messages: log-many messages like recursive doubling, but
// each rank moves and reduces only about 2n bytes like the ring.
//
// What: every rank's `data` (count elements of dtype) is replaced, in place, by the element-wise
// reduction over all ranks with `op`, applied as given (AVG and PREMUL_SUM reduce as SUM; the
// caller divides or pre-scales). All ranks end bit-identical: each block is reduced on one rank
// (per round, by the partner pair on identical inputs) and then copied.
//
// Phases (schedule in coll/patterns/recursive_doubling.h; pof2 = largest power of two <= p;
// data split into pof2 near-equal blocks as in coll/patterns/ring.h):
// 1. Fold (p not a power of two): rank r >= pof2 sends its whole data to r - pof2, which
//    reduces it, and sits out until phase 4.
// 2. Reduce-scatter by halving, rounds k = 0 .. log2(pof2)-1: partner v ^ (pof2 >> (k+1));
//    each keeps the half of its current span holding block v, sends the other half, and reduces
//    the partner's copy of its half. Afterwards rank v owns the reduced block v.
// 3. All-gather by doubling, rounds k = 0 .. log2(pof2)-1: partner v ^ 2^k; partners swap the
//    spans they own (2^k blocks each), straight into data.
// 4. Unfold: rank r < p - pof2 sends the whole result to r + pof2.
//
// Cost: 2 log2(pof2) alpha + 2 ((pof2-1)/pof2) n beta, plus 2 (alpha + n beta) when p is not a
// power of two; ((pof2-1)/pof2) n bytes of reduction per rank (plus n for a fold target).
// Scratch: half the data (n/2 bytes, rounded up to whole blocks); none on extra ranks.
//
// Supports any world size >= 1 (1: no-op) and any count >= 0; when count < pof2 some blocks are
// empty and messages that would carry nothing are skipped by both sides alike. Not
// thread-safe: runs on the call's thread; `data` must stay valid for the call.
#pragma once

#include <cstddef>

#include "coll/collective_call.h"
#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft::coll {

void rabenseifner_all_reduce(CollectiveCall& call, void* data, std::size_t count, DType dtype,
                             ReduceOp op);

}  // namespace weft::coll
