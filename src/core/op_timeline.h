// OpTimeline — every operation one group ran on this rank, for WEFT_TRACE's timeline.
//
// One writer at a time (the recorder keeps collectives and point-to-point calls on separate
// timelines and serializes the latter). An append is a plain copy of the entry into the next
// slot of a ring of segments, each slot a cache line of its own, and one release store of the
// count: no encoding, no branch on what the entry holds, no read-modify-write, so that the
// caller of an 8-byte collective does not pay for the trace's compactness. The trace's spill
// thread, woken when a segment fills, encodes each full segment (timeline_codec.h, ~6 bytes for
// a repeated op, against 64 in the ring) and appends it to a spill file (unnamed, in the trace's
// directory). When the ring comes round to a segment not yet spilled, the append spills it
// itself.
//
// for_each() may run while the writer appends (a program that exits with a collective still
// running on the group's worker): it reads the spill file up to what was fully written, and the
// ring's entries it can prove the writer did not overwrite while it copied them.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/timeline_codec.h"
#include "core/timeline_entry.h"
#include "util/mutex.h"

namespace weft::core {

class OpTimeline {
 public:
  static constexpr uint64_t kSegmentEntries = 1024;  // 64 KiB of ring
  static constexpr uint64_t kRingSegments = 4;
  // 4 GiB of spill at most per timeline, then appends are counted as dropped.
  static constexpr uint64_t kMaxSpillBytes = uint64_t{4} << 30;

  // Spills into an unnamed file in `spill_dir`. `segment_sealed`, when given, is bumped and
  // notified each time a segment fills: the spill thread waits on it.
  explicit OpTimeline(const std::string& spill_dir,
                      std::atomic<uint32_t>* segment_sealed = nullptr);
  ~OpTimeline();
  OpTimeline(const OpTimeline&) = delete;
  OpTimeline& operator=(const OpTimeline&) = delete;

  void append(const TimelineEntry& entry) {
    uint64_t position = position_.load(std::memory_order_relaxed);
    if (position >= segment_end_ && !start_segment_at(position)) [[unlikely]] {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    slot(position).store(entry);
    position_.store(position + 1, std::memory_order_release);
  }

  // Encodes the full segments not yet in the spill file and writes them, oldest first.
  void spill_sealed_segments();

  // Calls `visit` on every entry, in append order.
  void for_each(const std::function<void(const TimelineEntry&)>& visit) const;
  // Entries not kept: past kMaxSpillBytes, or once the spill file could not be written (the
  // reason is logged).
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  // A cache line per entry: an append writes one line and shares none with its neighbours.
  // Held as words written and read with relaxed atomic accesses, because for_each() may copy a
  // slot while the writer rewrites it (and discards that copy): as a plain TimelineEntry that
  // would be a data race (undefined, and reported by ThreadSanitizer); on x86-64 each access is
  // the plain move a copy of the struct would make.
  struct alignas(64) Slot {
    static constexpr std::size_t kWords = (sizeof(TimelineEntry) + 7) / 8;
    uint64_t words[kWords];

    void store(const TimelineEntry& entry) {
      uint64_t copy[kWords] = {};
      std::memcpy(copy, &entry, sizeof entry);
      for (std::size_t i = 0; i < kWords; ++i) {
        std::atomic_ref<uint64_t>(words[i]).store(copy[i], std::memory_order_relaxed);
      }
    }
    TimelineEntry load() {
      uint64_t copy[kWords];
      for (std::size_t i = 0; i < kWords; ++i) {
        copy[i] = std::atomic_ref<uint64_t>(words[i]).load(std::memory_order_relaxed);
      }
      TimelineEntry entry;
      std::memcpy(static_cast<void*>(&entry), copy, sizeof entry);
      return entry;
    }
  };
  static_assert(std::is_trivially_copyable_v<TimelineEntry>);
  static constexpr uint64_t kRingEntries = kRingSegments * kSegmentEntries;

  Slot& slot(uint64_t position) const { return ring_[position % kRingEntries]; }
  // Makes the segment holding `position` (its first entry) the one written; false when no more
  // may be written.
  bool start_segment_at(uint64_t position);
  void spill_sealed_segments_before(uint64_t end);
  // Appends the encoding of the segment to the spill file; false when it could not.
  bool spill_segment(uint64_t segment) WEFT_REQUIRES(spill_mutex_);
  // Segments [first, end) from the spill file, whose segment `first` starts at `offset` (moved
  // past them); false when it cannot be read.
  bool visit_spilled(uint64_t first, uint64_t end, off_t& offset,
                     const std::function<void(const TimelineEntry&)>& visit) const;

  // What an append touches, on a line of its own.
  alignas(64) std::atomic<uint64_t> position_{0};  // entries appended; published per entry
  uint64_t segment_end_ = 0;                       // the writer's: where its segment ends
  std::unique_ptr<Slot[]> ring_;

  alignas(64) int spill_fd_ = -1;
  pid_t owner_pid_;  // a forked child must not write into its parent's spill file
  std::atomic<uint32_t>* segment_sealed_;
  util::Mutex spill_mutex_;  // one spiller at a time: the spill thread or the writer
  std::vector<uint8_t> encoded_ WEFT_GUARDED_BY(spill_mutex_);  // a segment's encoding
  off_t spill_end_ WEFT_GUARDED_BY(spill_mutex_) = 0;           // the spill file's size
  std::atomic<uint64_t> spilled_{0};  // segments [0, spilled_) are in the spill file
  // Segments from this one on are not written: where spilling stopped (no file, full, failed).
  std::atomic<uint64_t> limit_{UINT64_MAX};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace weft::core
