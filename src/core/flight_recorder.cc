#include "core/flight_recorder.h"

#include <algorithm>
#include <bit>

namespace weft::core {

FlightRecorder::FlightRecorder(std::size_t capacity)
    : capacity_(capacity),
      slot_mask_(std::bit_ceil(capacity) - 1),
      entries_(capacity ? new Entry[slot_mask_ + 1] : nullptr) {}

std::size_t FlightRecorder::copy_to(OpRecord* out, std::size_t room) const {
  if (capacity_ == 0 || room == 0) return 0;
  uint64_t next = next_.load(std::memory_order_acquire);
  uint64_t kept = std::min<uint64_t>(next - 1, std::min<uint64_t>(capacity_, room));
  std::size_t written = 0;
  TimelineClock::Pair now = in_ticks_ ? tick_clock_.pair() : TimelineClock::Pair{};
  auto steady_ns = [&](int64_t time) {
    return in_ticks_ ? TimelineClock::to_steady_ns(time, ticks_started_, now) : time;
  };
  for (uint64_t index = next - kept; index < next; ++index) {
    const Entry& entry = entry_of(index);
    if (entry.index.load(std::memory_order_acquire) != index) continue;  // being rewritten
    OpRecord& record = out[written++];
    record.index = index;
    record.what.op = entry.op.load(std::memory_order_relaxed);
    record.what.algorithm = entry.algorithm.load(std::memory_order_relaxed);
    record.what.seq = entry.seq.load(std::memory_order_relaxed);
    record.what.bytes = entry.bytes.load(std::memory_order_relaxed);
    record.what.dtype = static_cast<DType>(entry.dtype.load(std::memory_order_relaxed));
    record.what.peer = entry.peer.load(std::memory_order_relaxed);
    record.start_ns = steady_ns(entry.start_ns.load(std::memory_order_relaxed));
    int64_t end = entry.end_ns.load(std::memory_order_relaxed);
    record.end_ns = end == 0 ? 0 : steady_ns(end);
    record.outcome = static_cast<OpOutcome>(entry.outcome.load(std::memory_order_relaxed));
  }
  return written;
}

std::vector<OpRecord> FlightRecorder::snapshot() const {
  std::vector<OpRecord> records(capacity_);
  records.resize(copy_to(records.data(), records.size()));
  return records;
}

}  // namespace weft::core
