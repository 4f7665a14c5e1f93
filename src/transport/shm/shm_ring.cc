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
  std::size_t need = footprint(bytes);
  uint64_t tail = control_->tail.load(std::memory_order_relaxed);
  std::size_t to_end = capacity_ - (tail & (capacity_ - 1));
  // A record never wraps: when it does not fit before the end, the rest of the ring is padding.
  std::size_t padding = need > to_end ? to_end : 0;
  if (tail + padding + need - known_head_ > capacity_) {
    known_head_ = control_->head.load(std::memory_order_acquire);
    if (tail + padding + need - known_head_ > capacity_) return nullptr;
  }
  if (padding) {
    RecordHeader pad{kPadding, static_cast<uint32_t>(padding - kRecordHeaderBytes)};
    std::memcpy(at(tail), &pad, sizeof pad);
    tail += padding;
  }
  RecordHeader header{kind, static_cast<uint32_t>(bytes)};
  std::memcpy(at(tail), &header, sizeof header);
  reserved_end_ = tail + need;
  return at(tail) + kRecordHeaderBytes;
}

void ShmRing::commit() { control_->tail.store(reserved_end_, std::memory_order_release); }

bool ShmRing::front(Record* record) {
  uint64_t head = control_->head.load(std::memory_order_relaxed);
  for (;;) {
    uint64_t tail = control_->tail.load(std::memory_order_acquire);
    if (head == tail) return false;
    RecordHeader header;
    std::memcpy(&header, at(head), sizeof header);
    if (header.kind == kPadding) {
      head += kRecordHeaderBytes + header.bytes;
      control_->head.store(head, std::memory_order_release);
      continue;
    }
    record->kind = header.kind;
    record->bytes = header.bytes;
    record->body = at(head) + kRecordHeaderBytes;
    front_end_ = head + footprint(header.bytes);
    return true;
  }
}

void ShmRing::pop() { control_->head.store(front_end_, std::memory_order_release); }

bool ShmRing::empty() const {
  return control_->head.load(std::memory_order_relaxed) ==
         control_->tail.load(std::memory_order_acquire);
}

}  // namespace weft::transport
