// The algorithms of each collective by id: the one place that maps the selector's choice to
// the function that runs it. Arguments as the algorithms take them (bytes for data movement,
// element counts for reductions).
#pragma once

#include <span>
#include <vector>

#include "coll/collective_call.h"
#include "coll/selector.h"
#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft::coll {

void run_broadcast(Algorithm algorithm, CollectiveCall& call, void* data, std::size_t bytes,
                   int root);
// `data` receives the reduction of every rank's `input` (the same buffer: in place).
void run_all_reduce(Algorithm algorithm, CollectiveCall& call, const void* input, void* data,
                    std::size_t count, DType dtype, ReduceOp op);
void run_reduce(Algorithm algorithm, CollectiveCall& call, void* data, std::size_t count,
                DType dtype, ReduceOp op, int root);
void run_all_gather(Algorithm algorithm, CollectiveCall& call, const void* input, void* output,
                    std::span<const std::size_t> byte_counts);
// all_gather of `block` bytes from each member into rank order without gaps (the API's call
// with one output buffer): the same as run_all_gather, without size lists where it can.
void run_even_all_gather(Algorithm algorithm, CollectiveCall& call, const void* input, void* output,
                         std::size_t block);
void run_gather(Algorithm algorithm, CollectiveCall& call, const void* input, void* output,
                std::span<const std::size_t> byte_counts, int root);
void run_scatter(Algorithm algorithm, CollectiveCall& call, const void* input, void* output,
                 std::span<const std::size_t> byte_counts, int root);
void run_reduce_scatter(Algorithm algorithm, CollectiveCall& call, const void* input, void* output,
                        std::span<const std::size_t> counts, DType dtype, ReduceOp op);
// reduce_scatter of `count` elements to each member from one input of count * size elements
// in rank order (the API's call with one input buffer): the same as run_reduce_scatter,
// without size lists where it can.
void run_even_reduce_scatter(Algorithm algorithm, CollectiveCall& call, const void* input,
                             void* output, std::size_t count, DType dtype, ReduceOp op);
void run_all_to_all(Algorithm algorithm, CollectiveCall& call, const void* input,
                    std::span<const std::size_t> send_bytes,
                    std::span<const std::size_t> send_offsets, void* output,
                    std::span<const std::size_t> recv_bytes,
                    std::span<const std::size_t> recv_offsets);
// all_to_all of `block` bytes to each member, blocks in rank order without gaps (the API's
// call without split sizes): the same as run_all_to_all, without size lists where it can.
void run_even_all_to_all(Algorithm algorithm, CollectiveCall& call, const void* input, void* output,
                         std::size_t block);
void run_barrier(Algorithm algorithm, CollectiveCall& call);
void run_scan(Algorithm algorithm, CollectiveCall& call, const void* input, void* output,
              std::size_t count, DType dtype, ReduceOp op, bool exclusive);

}  // namespace weft::coll
