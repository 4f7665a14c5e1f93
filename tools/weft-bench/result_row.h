// What one line of output holds: a size of one (op, dtype, redop, root), with its
// out-of-place and in-place cells. Filled by main, read by the printers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench_op.h"
#include "sizes.h"
#include "timed_loop.h"
#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft_bench {

struct Cell {
  bool measured = false;  // false: the API has no such form (printed N/A)
  Timing timing;
  double algbw_GBps = 0;  // bytes / time, GB = 1e9 bytes
  double busbw_GBps = 0;  // algbw x busbw_factor
  bool checked = false;
  uint64_t wrong = 0;  // MAX over ranks of this rank's wrong elements
};

struct ResultRow {
  BenchOp op;
  weft::DType dtype;
  weft::ReduceOp::Kind redop;  // meaningful when traits_of(op).reduces
  int root;                    // -1 for ops without a root
  Shape shape;
  Cell out_of_place;
  Cell in_place;
};

// The settings and the job, for the headers of every output.
struct RunInfo {
  int ranks = 0;
  int cores = 0;
  std::vector<std::string> rank_lines;  // "Pid 123 on host", one per rank
};

}  // namespace weft_bench
