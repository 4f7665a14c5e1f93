#include "transport/shm/shm_ring.h"

#include <cstring>

namespace weft::transport {

namespace {

struct RecordHeader {
  uint32_t kind;
  uint32_t bytes;
};

}  // namespace

ShmRing::ShmRing(void* memory, std::size_t capacity)
    : control_(static_cast<RingControl*>(memory)),
      data_(static_cast<uint8_t*>(memory) + sizeof(RingControl)),
      capacity_(capacity) {}

uint8_t* ShmRing::reserve(uint32_t kind, std::size_t bytes) {
  if (fault_) return nullptr;
  std::size_t need = ring_footprint(bytes);
  uint64_t tail = control_->tail.load(std::memory_order_relaxed);
  // The tail lies in the consumer's memory: off a cache line, a header could cross the end.
  if (tail % kRingAlignment != 0) {
    fault_ = record_fault("ring tail position", tail, "a multiple of", kRingAlignment);
    return nullptr;
  }
  std::size_t to_end = capacity_ - (tail & (capacity_ - 1));
  // A record never wraps: when it does not fit before the end, the rest of the ring is padding.
  std::size_t padding = need > to_end ? to_end : 0;
  if (tail + padding + need - known_head_ > capacity_) {
    known_head_ = control_->head.load(std::memory_order_acquire);
    if (tail - known_head_ > capacity_) {
      fault_ =
          record_fault("bytes the consumer has not read", tail - known_head_, "at most", capacity_);
      return nullptr;
    }
    if (tail + padding + need - known_head_ > capacity_) return nullptr;
  }
  if (padding) {
    RecordHeader pad{kRingPadding, static_cast<uint32_t>(padding - kRingRecordHeaderBytes)};
    std::memcpy(at(tail), &pad, sizeof pad);
    tail += padding;
  }
  RecordHeader header{kind, static_cast<uint32_t>(bytes)};
  std::memcpy(at(tail), &header, sizeof header);
  reserved_end_ = tail + need;
  return at(tail) + kRingRecordHeaderBytes;
}

void ShmRing::commit() { control_->tail.store(reserved_end_, std::memory_order_release); }

bool ShmRing::front(Record* record) {
  if (fault_) return false;
  uint64_t head = control_->head.load(std::memory_order_relaxed);
  for (;;) {
    uint64_t tail = control_->tail.load(std::memory_order_acquire);
    if (head == tail) return false;
    RingRecordView view = decode_ring_record(data_, capacity_, head, tail);
    if (view.fault) {
      fault_ = view.fault;
      return false;
    }
    if (view.padding) {
      head += view.footprint;
      control_->head.store(head, std::memory_order_release);
      continue;
    }
    record->kind = view.kind;
    record->bytes = view.bytes;
    record->body = at(head) + kRingRecordHeaderBytes;
    front_end_ = head + view.footprint;
    return true;
  }
}

void ShmRing::pop() { control_->head.store(front_end_, std::memory_order_release); }

bool ShmRing::empty() const {
  return control_->head.load(std::memory_order_relaxed) ==
         control_->tail.load(std::memory_order_acquire);
}

}  // namespace weft::transport
