// Ring reduce-scatter with uneven blocks, pipelined in segments.
//
// What: `input` holds sum(counts) elements of dtype, block b (counts[b] elements) after blocks
// 0..b-1. On return, `output` on rank r holds counts[r] elements: the element-wise reduction of
// block r over all ranks' inputs with `op`, applied as given (AVG and PREMUL_SUM reduce as SUM;
// the caller divides or pre-scales). `input` is never written. Counts may differ and may be 0
// (a rank with counts[r] == 0 gets nothing and `output` may be null); counts.size() must be the
// world size and every rank must pass the same counts. `output` must not overlap `input`, except
// that it may be exactly rank r's block of it.
//
// Phase (schedule in coll/patterns/ring.h): size-1 steps; step s sends block r-s-1 to the right
// and receives block r-s-2 from the left; the received partial sum is reduced with this rank's
// own input block and forwarded as step s+1's send; the last step (block r) is reduced straight
// into `output`. Step 0 sends straight from `input`.
// Pipelining: blocks move in segments of call.segment_bytes() (whole elements); receives run
// kReceiveDepth segments ahead into segment slots, and each segment is forwarded as soon as it
// is reduced. Partial sums live in two accumulators of the largest block (step s writes one
// while step s-1's sends still read the other); if a block would need more segments than step
// numbers allow, segments are made larger.
//
// Cost: (p-1)(alpha + (n/p) beta) for n = sum(counts) bytes split evenly; with uneven counts
// each step costs its largest block. (p-1) blocks of reduction per rank. Scratch: two largest
// blocks plus kReceiveDepth segments (none when p <= 2 beyond the segments).
//
// Supports any world size >= 1 (1: copies rank 0's block to output) and any counts. Not
// thread-safe: runs on the call's thread; buffers must stay valid for the call.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "coll/collective_call.h"
#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft::coll {

void ring_reduce_scatter(CollectiveCall& call, const void* input, void* output,
                         std::span<const std::size_t> counts, DType dtype, ReduceOp op);

}  // namespace weft::coll
