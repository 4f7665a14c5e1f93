// OpTimeline — every operation one group ran on this rank, for WEFT_TRACE's timeline.
//
// One writer at a time (the recorder keeps collectives and point-to-point calls on separate
// timelines and serializes the latter). An append encodes the entry (timeline_codec.h, ~6
// bytes for a repeated op) into a ring of segments kept hot in cache. Each sealed segment goes
// to a spill file (unnamed, in the trace's directory), written by the trace's spill thread,
// which the append that seals a segment wakes, or by the append itself when the ring comes
// round to a segment not yet spilled.
//
// for_each() may run while the writer appends (a program that exits with a collective still
// running on the group's worker): it reads the spill file up to what was fully written, and the
// ring's bytes it can prove the writer did not overwrite while it copied them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/timeline_codec.h"
#include "core/timeline_entry.h"
#include "util/mutex.h"

namespace weft::core {

class OpTimeline {
 public:
  static constexpr std::size_t kSegmentBytes = 64 * 1024;
  static constexpr std::size_t kRingSegments = 4;
  // 4 GiB of spill at most per timeline, then appends are counted as dropped.
  static constexpr uint64_t kMaxSegments = 65536;

  // Spills into an unnamed file in `spill_dir`. `segment_sealed`, when given, is bumped and
  // notified each time a segment is sealed: the spill thread waits on it.
  explicit OpTimeline(const std::string& spill_dir,
                      std::atomic<uint32_t>* segment_sealed = nullptr);
  ~OpTimeline();
  OpTimeline(const OpTimeline&) = delete;
  OpTimeline& operator=(const OpTimeline&) = delete;

  void append(const TimelineEntry& entry) {
    if (used_ + TimelineEncoder::kMaxEncodedBytes > kSegmentBytes && !start_next_segment()) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    used_ += encoder_.encode(entry, segment_bytes(segment_) + used_);
    position_.store(segment_ * kSegmentBytes + used_, std::memory_order_release);
  }

  // Writes the sealed segments not yet in the spill file, oldest first.
  void spill_sealed_segments();

  // Calls `visit` on every entry, in append order.
  void for_each(const std::function<void(const TimelineEntry&)>& visit) const;
  // Entries not kept: past kMaxSegments, or once the spill file could not be written (the
  // reason is logged).
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  uint8_t* segment_bytes(uint64_t segment) const {
    return ring_.get() + (segment % kRingSegments) * kSegmentBytes;
  }
  // Seals the current segment and moves to the next; false when no more may be written.
  bool start_next_segment();
  void spill_sealed_segments_before(uint64_t end);
  // Segments [first, end) from the spill file; false when it cannot be read.
  bool visit_spilled(uint64_t first, uint64_t end,
                     const std::function<void(const TimelineEntry&)>& visit) const;

  std::unique_ptr<uint8_t[]> ring_;
  int spill_fd_ = -1;
  std::atomic<uint32_t>* segment_sealed_;
  // The writer's own: the segment it writes, the bytes used in it, the encoder's state.
  uint64_t segment_ = 0;
  std::size_t used_ = 0;
  TimelineEncoder encoder_;
  // What readers and the spiller see: segment_ * kSegmentBytes + used_, published per entry.
  std::atomic<uint64_t> position_{0};
  // One spiller at a time: the spill thread or the writer. Guards no member (spilled_ is read
  // without it; spill_fd_ is set once by the constructor).
  util::Mutex spill_mutex_;
  std::atomic<uint64_t> spilled_{0};  // segments [0, spilled_) are in the spill file
  // Segments from this one on are not written: kMaxSegments, or where spilling failed.
  std::atomic<uint64_t> limit_{kMaxSegments};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace weft::core
