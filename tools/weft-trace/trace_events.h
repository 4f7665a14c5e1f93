// The ops of a weft timeline as weft-trace reads them: DIR/trace.json (weftrun's merge) or,
// when there is none, the ranks' DIR/rank<R>.json with their clock offsets applied, or one
// trace file given by its path.
//
// Read as a stream: each event is handed on as it is parsed and then dropped, so a long job's
// trace takes the memory of one event, not of the whole document (a parsed JSON event costs
// hundreds of bytes, tens of millions of them in a day-long trace).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

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

// Calls `visit` on every op ("X" event) of the trace at `path`. A rank's file must give its
// clock offset (otherData) before its events, as weft writes it. Throws std::runtime_error when
// nothing readable is there.
void for_each_trace_op(const std::string& path, const std::function<void(const TraceOp&)>& visit);

}  // namespace weft_trace
