// Binomial-tree reduce, pipelined in segments.
//
// What: on `root`, `data` (count elements of dtype) is replaced by the element-wise reduction
// over all ranks with `op`, applied as given (AVG and PREMUL_SUM reduce as SUM; the caller
// divides or pre-scales). On every other rank `data` is only read, never written: partial
// results go to scratch.
//
// Tree: coll/patterns/binomial_tree.h (relative rank v = (rank - root) mod p; the parent of v
// clears its lowest set bit); the root has ceil(log2 p) children and the tree is ceil(log2 p)
// deep.
// Pipelining: data moves in segments of call.segment_bytes() (whole elements). For segment j a
// rank receives segment j from every child (the receives for j+1 are already posted), reduces
// its own segment and the children's at once with reduce::reduce_many (float16/bfloat16 round
// once per rank, not once per child), and sends the result to its parent, so all levels of the
// tree work at once on different segments. Leaves send straight from data.
//
// Cost: ceil(log2 p)(alpha + n beta) unsegmented; with s segments about
// (ceil(log2 p) + s - 1)(alpha + (n/s) beta) when reduction keeps up. A rank with c children
// reduces c n bytes. Scratch: 2 segments per child, plus 2 segments of partial results on a
// non-root with children.
//
// Supports any world size >= 1, any root in [0, p), any count >= 0. Not thread-safe: runs on the
// call's thread; `data` must stay valid for the call.
#pragma once

#include <cstddef>

#include "coll/collective_call.h"
#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft::coll {

void binomial_reduce(CollectiveCall& call, void* data, std::size_t count, DType dtype, ReduceOp op,
                     int root);

}  // namespace weft::coll
