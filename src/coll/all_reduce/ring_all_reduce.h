// Ring all-reduce: a reduce-scatter around the ring, then an all-gather around the ring,
// pipelined in segments (Patarasuk and Yuan; Baidu's ring; gloo's allreduce ring()).
//
// What: every rank's `data` (count elements of dtype) receives the element-wise reduction over
// all ranks' `input` with `op`, applied as given (AVG and PREMUL_SUM reduce as SUM; the caller
// divides or pre-scales). In place when input == data; otherwise input is only read (no
// up-front copy: the first reduction of each block writes data). Every rank ends with
// bit-identical data: each block is reduced on one rank and copied to the others.
//
// Phases (schedule in coll/patterns/ring.h; data split into size near-equal blocks):
// 1. Reduce-scatter, size-1 steps: step s receives block r-s-2 from the left, reduces it with
//    the input's into data and forwards it as step s+1's send; afterwards rank r owns the
//    reduced block r. Every other block of data is then written by phase 2.
// 2. All-gather, size-1 steps: step s receives block r-s-1 from the left straight into data and
//    forwards it as step s+1's send.
// Pipelining: blocks move in segments of call.segment_bytes() (whole elements). Receives run
// ahead of the reduction by kReceiveDepth segments into a scratch of kReceiveDepth segments, so
// the transport fills the next segment while this one is reduced, and a segment is forwarded
// the moment it is reduced, so all ranks work at once on different segments. Scratch is
// kReceiveDepth * segment_bytes, whatever the count. If a block would need more segments than
// step numbers allow (kMaxSteps / (2(size-1)) per block), segments are made larger.
//
// Cost: 2(p-1) steps of one block each: 2(p-1)(alpha + (n/p) beta) plus (p-1)/p n bytes of
// reduction per rank; with s segments per block, 2(p-1)s messages of n/(p s) bytes.
//
// Supports any world size >= 1 (1: no-op) and any count >= 0; blocks are empty when
// count < size (no message is sent for an empty segment list). Buffers: `input` and `data` are
// the caller's, equal or not overlapping, and must stay valid for the call. Not thread-safe: runs
// on the call's thread.
#pragma once

#include <cstddef>

#include "coll/collective_call.h"
#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft::coll {

void ring_all_reduce(CollectiveCall& call, const void* input, void* data, std::size_t count,
                     DType dtype, ReduceOp op);

}  // namespace weft::coll
