// OpRecorder — what a group records of its operations: the flight recorder (always, unless
// WEFT_FLIGHT_RECORDER=0) and the timeline (when WEFT_TRACE is set). One per Communicator;
// the launcher and the point-to-point calls bracket each operation with begin() and end().
//
// Two rings: the collectives', numbered by their sequence number (one writer at a time: the
// caller's thread or the group's worker, never both, as collectives run in order), and the
// point-to-point calls', which any thread may post (claimed with a fetch_add).
//
// Cost of a collective with the flight recorder only: a coarse clock read (~5-10 ns), a second
// one at its end unless it was small and never waited (end()), and a dozen relaxed stores,
// nothing shared with another group. The timeline adds two TimelineClock reads and a copy into
// its ring (a point-to-point call also takes the group's timeline lock, as any thread may post
// one). With neither: one predictable branch.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/flight_recorder.h"
#include "core/op_timeline.h"
#include "core/timeline_clock.h"
#include "core/trace_writer.h"
#include "util/mutex.h"

namespace weft::core {

class OpRecorder {
 public:
  // The largest op whose end may be dated with its start (end()): a copy or reduction of this
  // many bytes takes microseconds, far below the coarse clock's tick.
  static constexpr int64_t kUndatedEndBytes = 64 * 1024;

  // What begin() hands to end().
  struct Token {
    OpStart what;
    int64_t start = 0;  // now_for_flight_and_timeline()
    uint64_t index = 0;
  };

  // Reads WEFT_FLIGHT_RECORDER and WEFT_TRACE; `world` keys the rank's shared trace.
  OpRecorder(const std::string& group, const void* world, int world_rank, int world_size);
  ~OpRecorder();
  OpRecorder(const OpRecorder&) = delete;
  OpRecorder& operator=(const OpRecorder&) = delete;

  // A collective (what.seq >= 0) or a point-to-point call (what.seq < 0) starts.
  Token begin(const OpStart& what) {
    if (!active_) return Token{};
    int64_t now = now_for_flight_and_timeline();
    uint64_t index =
        what.seq >= 0 ? collectives_.begin_numbered(static_cast<uint64_t>(what.seq) + 1, what, now)
                      : point_to_point_.begin(what, now);
    return Token{what, now, index};
  }
  // `waited`: whether the op read its deadline (a wait went past its spin or needed a time
  // limit). One that did not, on at most kUndatedEndBytes, ends within the coarse clock's tick
  // of its start: its end is dated with its start, sparing a clock read (the timeline, which
  // needs durations, reads it anyway).
  void end(const Token& token, OpOutcome outcome, bool waited = true) {
    if (!active_) return;
    int64_t now = waited || timelines_ || token.what.bytes > kUndatedEndBytes
                      ? now_for_flight_and_timeline()
                      : token.start;
    (token.what.seq >= 0 ? collectives_ : point_to_point_).end(token.index, outcome, now);
    if (timelines_) [[unlikely]]
      append_to_timeline(token, now, outcome);
  }

  bool flight_enabled() const { return collectives_.enabled(); }
  // Both rings' entries, oldest first.
  std::vector<OpRecord> flight_snapshot() const;
  // The rank's trace (null without WEFT_TRACE).
  RankTrace* trace() const { return trace_.get(); }

  // Logs the flight recorder the first time only (a failure reaches a group by several paths:
  // its own error, the peers' news, a dead process) and (re)writes the rank's dump files every
  // time, so that they show how the failed op ended once the launcher has recorded it.
  void dump(const std::string& group, int rank, int world_rank, const Error& cause);
  // Whether dump() ran.
  bool dumped() const { return dumped_.load(std::memory_order_relaxed); }

 private:
  // The timeline needs durations to the nanosecond, the flight recorder alone does not: one
  // read of the timeline's clock serves both when it runs (the flight recorder then counts in
  // its ticks), and the coarse clock, a quarter of a precise read's cost, when it does not.
  int64_t now_for_flight_and_timeline() const {
    return timelines_ ? clock_.ticks() : coarse_now_ns();
  }
  // Out of line: kept in end(), it made end() too large to inline into every collective.
  void append_to_timeline(const Token& token, int64_t end, OpOutcome outcome);

  FlightRecorder collectives_;
  FlightRecorder point_to_point_;
  std::shared_ptr<RankTrace> trace_;
  std::shared_ptr<GroupTimelines> timelines_;
  TimelineClock clock_;
  // Serializes appends to timelines_->point_to_point (its writer is single-threaded; the
  // collectives' timeline has one writer, the group's caller, and takes no lock). Not an
  // annotation: it guards a member of the pointee, not of this object.
  util::Mutex point_to_point_timeline_mutex_;
  bool active_;
  std::atomic<bool> dumped_{false};
};

}  // namespace weft::core
