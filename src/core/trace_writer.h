// RankTrace — one rank's timeline for WEFT_TRACE=DIR: every group of the rank appends to its
// own OpTimeline, and the rank's file DIR/rank<R>.json is written when its last group is
// destroyed (and at exit, for groups a program never destroys).
//
// The file is Chrome-trace JSON (chrome://tracing, https://ui.perfetto.dev): "X" events with
// ts/dur in microseconds of this rank's steady clock, pid = rank, tid = the group (named by a
// thread_name record), args with the op's fields; "otherData" holds the rank and the offset to
// rank 0's clock, which weftrun applies when it merges the ranks' files into DIR/trace.json.
// Written by hand, not with a JSON library: libweft then depends on nothing more for it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/op_timeline.h"

namespace weft::core {

class RankTrace {
 public:
  // The trace shared by the groups of one World (key: its address); null when WEFT_TRACE is
  // unset. The first call for a World makes it.
  static std::shared_ptr<RankTrace> for_world(const void* world, int world_rank, int world_size);

  RankTrace(std::string dir, int world_rank, int world_size);
  ~RankTrace();  // writes the file
  RankTrace(const RankTrace&) = delete;
  RankTrace& operator=(const RankTrace&) = delete;

  // A new lane (a tid of the file) for a group.
  std::shared_ptr<OpTimeline> add_group(const std::string& group);
  void set_clock_offset_ns(int64_t offset) { clock_offset_ns_ = offset; }
  // (Re)writes DIR/rank<R>.json with everything recorded so far.
  void write() const;
  // The JSON text write() writes.
  std::string to_json() const;

 private:
  std::string dir_;
  int world_rank_;
  int world_size_;
  int64_t clock_offset_ns_ = 0;
  mutable std::mutex mutex_;  // guards lanes_ (groups come and go; appends do not take it)
  std::vector<std::pair<std::string, std::shared_ptr<OpTimeline>>> lanes_;
};

}  // namespace weft::core
