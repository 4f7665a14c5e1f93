// FlightRecorder — the last N operations of one group on this rank, always kept, so that when
// a job hangs or fails the error report shows where each rank was (docs/observability.md).
//
// A fixed ring of entries allocated once, when the group is made: recording an operation is
// one relaxed fetch_add to claim a slot, a few relaxed stores and a clock read; ending it is a
// load, two stores and a clock read. The clock is the caller's: the coarse steady clock, or,
// while the timeline runs, its ticks (read once for both), which copies turn into steady
// nanoseconds. No lock and no allocation, so a collective of
// 8 bytes does not notice it. Several threads may record at once (point-to-point calls from
// any thread, a group's worker and its caller): each claims its own slot. Every field is a
// relaxed atomic (a plain move on x86) so that a dump on another thread or in a signal handler
// reads no torn values that the language calls undefined; a dump may still see an entry
// half-updated, which is fine for a report.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/op_record.h"
#include "core/timeline_clock.h"

namespace weft::core {

class FlightRecorder {
 public:
  // capacity 0: disabled (begin() records nothing and returns 0).
  explicit FlightRecorder(std::size_t capacity);
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // Times given to begin() and end() from now on are `clock`'s ticks, read as steady time by
  // the line through `started` and the pair a copy takes.
  void count_in_ticks(const TimelineClock& clock, const TimelineClock::Pair& started) {
    tick_clock_ = clock;
    ticks_started_ = started;
    in_ticks_ = true;
  }

  std::size_t capacity() const { return capacity_; }
  bool enabled() const { return capacity_ > 0; }

  // Records an operation that starts at start_ns; returns its index (> 0) for end(), 0 when
  // disabled. Any number of threads at once.
  uint64_t begin(const OpStart& what, int64_t start_ns) {
    if (capacity_ == 0) return 0;
    return begin_at(next_.fetch_add(1, std::memory_order_relaxed), what, start_ns);
  }
  // begin() for a ring with one writer at a time that numbers its ops itself (index > 0,
  // increasing; a group's collectives use their sequence number): no atomic
  // read-modify-write, a visible part of an 8-byte collective's recording.
  uint64_t begin_numbered(uint64_t index, const OpStart& what, int64_t start_ns) {
    if (capacity_ == 0) return 0;
    next_.store(index + 1, std::memory_order_relaxed);
    return begin_at(index, what, start_ns);
  }
  // The operation `index` ended; nothing when its slot was reused meanwhile (more than
  // capacity() operations started since) or index is 0.
  void end(uint64_t index, OpOutcome outcome, int64_t end_ns) {
    if (index == 0) return;
    Entry& entry = entry_of(index);
    if (entry.index.load(std::memory_order_relaxed) != index) return;
    entry.end_ns.store(end_ns, std::memory_order_relaxed);
    entry.outcome.store(static_cast<uint8_t>(outcome), std::memory_order_relaxed);
  }

  // The kept entries, oldest first. Async-signal-safe: writes at most `room` records to `out`
  // and returns how many.
  std::size_t copy_to(OpRecord* out, std::size_t room) const;
  // The same, for ordinary code.
  std::vector<OpRecord> snapshot() const;

 private:
  uint64_t begin_at(uint64_t index, const OpStart& what, int64_t start_ns) {
    Entry& entry = entry_of(index);
    entry.index.store(0, std::memory_order_relaxed);  // being rewritten
    entry.op.store(what.op, std::memory_order_relaxed);
    entry.algorithm.store(what.algorithm, std::memory_order_relaxed);
    entry.seq.store(what.seq, std::memory_order_relaxed);
    entry.bytes.store(what.bytes, std::memory_order_relaxed);
    entry.dtype.store(static_cast<uint8_t>(what.dtype), std::memory_order_relaxed);
    entry.peer.store(what.peer, std::memory_order_relaxed);
    entry.start_ns.store(start_ns, std::memory_order_relaxed);
    entry.end_ns.store(0, std::memory_order_relaxed);
    entry.outcome.store(static_cast<uint8_t>(OpOutcome::kRunning), std::memory_order_relaxed);
    entry.index.store(index, std::memory_order_release);
    return index;
  }

  struct Entry {
    std::atomic<uint64_t> index{0};  // 0: empty or being rewritten
    std::atomic<const char*> op{nullptr};
    std::atomic<const char*> algorithm{nullptr};
    std::atomic<int64_t> seq{-1};
    std::atomic<int64_t> bytes{-1};
    std::atomic<int64_t> start_ns{0};
    std::atomic<int64_t> end_ns{0};
    std::atomic<int32_t> peer{-1};
    std::atomic<uint8_t> dtype{0};
    std::atomic<uint8_t> outcome{0};
  };

  // The ring has a power of two of slots, at least capacity_, so that a slot is found with a
  // mask: a 64-bit division takes tens of cycles and, microcoded like the read of the
  // time-stamp counter that the timeline adds around it, does not overlap with that read.
  Entry& entry_of(uint64_t index) const { return entries_[(index - 1) & slot_mask_]; }

  std::size_t capacity_;
  uint64_t slot_mask_;
  std::unique_ptr<Entry[]> entries_;
  bool in_ticks_ = false;
  TimelineClock tick_clock_;
  TimelineClock::Pair ticks_started_;
  std::atomic<uint64_t> next_{1};
};

}  // namespace weft::core
