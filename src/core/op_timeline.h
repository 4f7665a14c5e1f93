// OpTimeline — every operation one group ran on this rank, for WEFT_TRACE's timeline.
//
// Append-only and made of fixed chunks that never move: an append claims an index with one
// relaxed fetch_add and writes in place, allocating only a new chunk every kChunkRecords ops;
// nothing reallocates under a caller, and several threads may append at once (point-to-point
// calls). The writer publishes a record with a release store of its `ready` flag; the trace
// writer reads only ready records.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "core/op_record.h"

namespace weft::core {

class OpTimeline {
 public:
  static constexpr std::size_t kChunkRecords = 4096;
  // 64 Mi records at most (then appends are counted as dropped): 64 KiB of chunk pointers.
  static constexpr std::size_t kMaxChunks = 16384;

  OpTimeline();
  ~OpTimeline();
  OpTimeline(const OpTimeline&) = delete;
  OpTimeline& operator=(const OpTimeline&) = delete;

  void append(const OpRecord& record);
  // Calls `visit` on every ready record, in append order.
  void for_each(const std::function<void(const OpRecord&)>& visit) const;
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    OpRecord record;
    std::atomic<bool> ready{false};
  };
  struct Chunk {
    Slot slots[kChunkRecords];
  };
  Chunk* chunk(std::size_t number);

  std::unique_ptr<std::atomic<Chunk*>[]> chunks_;
  std::atomic<uint64_t> next_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace weft::core
