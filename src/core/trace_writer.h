// RankTrace — one rank's timeline for WEFT_TRACE=DIR: every group of the rank appends to its
// own OpTimelines, and the rank's file DIR/rank<R>.json is written when its last group is
// destroyed (and at exit, for groups a program never destroys). A thread of its own encodes the
// timelines' full segments and writes them to their spill files, off the callers' path.
//
// The file is Chrome-trace JSON (chrome://tracing, https://ui.perfetto.dev): "X" events with
// ts/dur in microseconds of this rank's steady clock, pid = rank, tid = the group (named by a
// thread_name record), args with the op's fields; "otherData" holds the rank and the offset to
// rank 0's clock, which weftrun applies when it merges the ranks' files into DIR/trace.json.
// Written by hand, not with a JSON library: libweft then depends on nothing more for it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/op_timeline.h"
#include "core/timeline_clock.h"
#include "util/mutex.h"

namespace weft::core {

// One group's timelines: its collectives and its point-to-point calls (written under a lock,
// as any thread may post one), drawn on one lane of the trace.
struct GroupTimelines {
  GroupTimelines(const std::string& spill_dir, std::atomic<uint32_t>* segment_sealed)
      : collectives(spill_dir, segment_sealed), point_to_point(spill_dir, segment_sealed) {}
  OpTimeline collectives;
  OpTimeline point_to_point;
};

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
  std::shared_ptr<GroupTimelines> add_group(const std::string& group);
  // The clock the timelines' entries are read with.
  const TimelineClock& clock() const { return clock_; }
  // A reading of the clock taken when the trace began.
  const TimelineClock::Pair& started() const { return started_; }
  void set_clock_offset_ns(int64_t offset) { clock_offset_ns_ = offset; }
  // (Re)writes DIR/rank<R>.json with everything recorded so far.
  void write() const;
  // Ends the spill thread (appends spill on their own from then on); at exit and on
  // destruction. Idempotent.
  void stop_spilling();
  // The JSON text write() writes, handed to `emit` in pieces.
  void write_json(const std::function<void(const std::string&)>& emit) const;

 private:
  std::string dir_;
  int world_rank_;
  int world_size_;
  int64_t clock_offset_ns_ = 0;
  TimelineClock clock_;
  TimelineClock::Pair started_;  // one end of the line that turns ticks into nanoseconds
  mutable util::Mutex mutex_;    // groups come and go; appends do not take it
  std::vector<std::pair<std::string, std::shared_ptr<GroupTimelines>>> lanes_
      WEFT_GUARDED_BY(mutex_);

  void spill_until_stopped();
  std::atomic<uint32_t> segments_sealed_{0};
  std::atomic<bool> stopping_{false};
  // The process that made the trace: a child forked from it has a copy of the timelines but
  // not the thread, and must neither join it nor write over its parent's file.
  pid_t owner_pid_;
  util::Mutex spiller_mutex_;
  std::unique_ptr<std::thread> spiller_ WEFT_GUARDED_BY(spiller_mutex_);
};

}  // namespace weft::core
