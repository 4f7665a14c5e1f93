// Merging the ranks' timelines (WEFT_TRACE=DIR): each rank writes DIR/rank<R>.json with its
// own steady clock and its offset to rank 0's; weftrun, once the ranks have ended, writes
// DIR/trace.json with every rank's events on rank 0's clock, starting at 0, one process per
// rank (docs/observability.md "Timeline").
#pragma once

#include <string>

namespace weft::run {

struct MergeResult {
  int ranks = 0;   // files merged
  int events = 0;  // "X" events in trace.json
  std::string path;
};

// Throws std::runtime_error on a file that is not a rank's trace.
MergeResult merge_rank_traces(const std::string& dir);

}  // namespace weft::run
