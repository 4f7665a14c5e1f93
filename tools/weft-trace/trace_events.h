// The ops of a weft timeline as weft-trace reads them: DIR/trace.json (weftrun's merge) or,
// when there is none, the ranks' DIR/rank<R>.json with their clock offsets applied, or one
// trace file given by its path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft_trace {

struct TraceOp {
  int rank = 0;
  std::string group;
  std::string op;
  int64_t seq = -1;  // -1: point-to-point
  int64_t bytes = 0;
  double start_us = 0;  // on rank 0's clock when the files carry offsets
  double duration_us = 0;
};

// Throws std::runtime_error when nothing readable is there.
std::vector<TraceOp> load_trace(const std::string& path);

}  // namespace weft_trace
