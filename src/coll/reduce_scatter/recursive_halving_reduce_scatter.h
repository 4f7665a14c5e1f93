// Reduce-scatter by recursive halving, with uneven blocks: log2 q exchanges instead of the
// ring's p - 1, for small and mid-sized messages.
//
// What: as ring_reduce_scatter (coll/reduce_scatter/ring_reduce_scatter.h): `input` holds
// sum(counts) elements, block b after blocks 0..b-1; on return `output` on rank r holds the
// reduction of block r over all ranks' inputs with `op` (AVG and PREMUL_SUM reduce as SUM; the
// caller divides or pre-scales). `input` is never written; `output` may be exactly rank r's
// block of it, and may be null when counts[r] == 0. Every rank passes the same counts.
//
// Phases (schedules in coll/patterns/adjacent_fold.h and recursive_doubling.h):
//   fold: off a power of two, each even rank of the first 2e sends its whole input to the odd
//     rank after it, which reduces it into its own; those two blocks are then the odd rank's;
//   halving: in round k each of the q remaining ranks sends its partner the half of its range
//     the partner keeps, and reduces the partner's copy of the half it keeps (ranges are the
//     contiguous blocks of the virtual ranks they cover);
//   unfold: an odd rank that took a neighbour in sends it its reduced block.
//
// Cost: (log2 q) alpha + (q-1)/q n (beta + gamma), plus off a power of two
// 2 alpha + n (beta + gamma) + (n/p) beta. Not pipelined: the ring, which overlaps receiving and
// reducing in segments, wins for large messages (coll/cost_model.cc prices both). Scratch: one
// accumulator of the whole input and a receive buffer of the first half a rank keeps (the whole
// input on a rank that takes a neighbour in).
//
// Supports any world size >= 1 and any counts (zeros included). Not thread-safe: runs on the
// call's thread; buffers must stay valid for the call.
#pragma once

#include <cstddef>
#include <span>

#include "coll/collective_call.h"
#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft::coll {

void recursive_halving_reduce_scatter(CollectiveCall& call, const void* input, void* output,
                                      std::span<const std::size_t> counts, DType dtype,
                                      ReduceOp op);

}  // namespace weft::coll
