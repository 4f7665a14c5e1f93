// The sizes a run steps through, and the element counts each op uses at one size.
//
// Contract: pure functions. size_list follows nccl-tests: from min_bytes, multiplied by
// step_factor while it is > 1, else step_bytes added, up to max_bytes. shape_of follows the
// anchors (shared/anchors/mpi_coll_bench.c): at least one element, and for the block ops
// (all_gather, gather, reduce_scatter, all_to_all, scatter) the count rounded down to a
// multiple of the world size, at least one element per rank.
#pragma once

#include <cstddef>
#include <vector>

#include "bench_op.h"

namespace weft_bench {

std::vector<std::size_t> size_list(std::size_t min_bytes, std::size_t max_bytes,
                                   std::size_t step_factor, std::size_t step_bytes);

struct Shape {
  std::size_t count = 0;  // nccl-tests' count: elements of the "size" buffer
  std::size_t block = 0;  // elements per rank block (block ops); count otherwise
  std::size_t bytes = 0;  // count x element size: the size reported
};

Shape shape_of(BenchOp op, std::size_t size_bytes, std::size_t element_bytes, int world_size);

}  // namespace weft_bench
