// ShmRing — a single-producer, single-consumer ring of records in memory shared by two
// processes of one host: the sender writes, the receiver reads, no lock and no system call.
//
// Records are contiguous (a record never wraps: the producer pads to the end of the ring
// first) and start on a cache line, so a small message costs the cache lines it covers and
// nothing else. Positions grow without bound (64 bits); the producer owns `tail`, the consumer
// `head`, each on its own cache line. The producer publishes with release, the consumer reads
// with acquire, so a record is whole when it is seen.
// Both sides are processes that may be buggy: every position and length read from the shared
// part is checked (ring_record.h) before it is used. A ring found broken stays broken: the side
// that found it says why (fault()) and gets nothing more from it.
// Thread-safety: one producer thread and one consumer thread at a time (callers hold their own
// locks); the two sides may run at once.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "transport/shm/ring_record.h"

namespace weft::transport {

// The shared part of a ring, in front of its data.
struct alignas(64) RingControl {
  // Producer's line.
  alignas(64) std::atomic<uint64_t> tail{0};
  std::atomic<uint32_t> producer_waiting{0};  // the sender has sends queued for lack of room
  // The sender shut down cleanly after its last record (its goodbye): set after that record's
  // tail, so a receiver that sees it has every record the sender will ever write.
  std::atomic<uint32_t> sender_left{0};
  // Consumer's line.
  alignas(64) std::atomic<uint64_t> head{0};
  std::atomic<uint32_t> receiver_can_pull{0};  // the receiver reads the sender's memory (CMA)
};
static_assert(sizeof(RingControl) == 128);

class ShmRing {
 public:
  struct Record {
    uint32_t kind = 0;
    const uint8_t* body = nullptr;
    uint32_t bytes = 0;
  };

  ShmRing() = default;
  // `memory` holds a RingControl followed by `capacity` bytes (a power of two, >= 4 KiB).
  ShmRing(void* memory, std::size_t capacity);

  RingControl& control() const { return *control_; }
  // The largest body one record can carry.
  std::size_t max_body() const { return ring_max_body(capacity_); }
  // What the other side wrote that broke the ring; false while it is whole.
  const RecordFault& fault() const { return fault_; }

  // --- producer -----------------------------------------------------------------------------
  // Room for a record with a body of `bytes` (<= max_body()), or null while the ring is too
  // full or broken. The body is written by the caller, then commit() publishes the record.
  uint8_t* reserve(uint32_t kind, std::size_t bytes);
  void commit();

  // --- consumer -----------------------------------------------------------------------------
  // The oldest record, if any; it stays until pop(). False too when the ring is broken.
  bool front(Record* record);
  void pop();
  bool empty() const;

 private:
  uint8_t* at(uint64_t position) const { return data_ + (position & (capacity_ - 1)); }

  RingControl* control_ = nullptr;
  uint8_t* data_ = nullptr;
  std::size_t capacity_ = 0;
  // Producer's private state: the reservation not yet committed, and the consumer's position
  // as last read (reloaded only when the ring looks full: the line stays with the consumer).
  uint64_t reserved_end_ = 0;
  uint64_t known_head_ = 0;
  // Consumer's private state: the size of the record front() returned.
  uint64_t front_end_ = 0;
  RecordFault fault_;
};

}  // namespace weft::transport
