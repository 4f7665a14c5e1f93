// decode_ring_record — how the consumer of a ShmRing reads the record at its position, as a pure
// function of the ring's bytes and positions. The producer is another process: a length or a
// position it wrote is checked against the ring's geometry before anything is read through it,
// so a buggy producer yields a RecordFault, never a read outside the ring.
//
// A record: an 8-byte header (kind, body length) then the body, starting on a cache line and
// never wrapping. Padding (kind kRingPadding) fills the ring from a record's start to its end.
// Cost: a handful of compares per record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "transport/shm/record_fault.h"

namespace weft::transport {

inline constexpr std::size_t kRingRecordHeaderBytes = 8;
inline constexpr std::size_t kRingAlignment = 64;
inline constexpr uint32_t kRingPadding = 0xffffffffu;

// The bytes a record with a body of `body` bytes covers, header and alignment included.
constexpr uint64_t ring_footprint(uint64_t body) {
  return (kRingRecordHeaderBytes + body + kRingAlignment - 1) & ~uint64_t{kRingAlignment - 1};
}

// The largest body a record may carry in a ring of `capacity` bytes: half the ring, so a record
// always fits once the ring is empty, whatever padding it needs.
constexpr uint64_t ring_max_body(uint64_t capacity) {
  return capacity / 2 - kRingRecordHeaderBytes;
}

struct RingRecordView {
  RecordFault fault;     // set: nothing else is meaningful
  bool padding = false;  // skip `footprint` bytes
  uint32_t kind = 0;
  uint32_t bytes = 0;      // the body's length; the body follows the header
  uint64_t footprint = 0;  // the consumer's position moves on by this much
};

// The record at position `head` of a ring of `capacity` bytes (a power of two) at `data`, whose
// producer has published up to position `tail` (head != tail). Inline: it runs for every record.
inline RingRecordView decode_ring_record(const uint8_t* data, std::size_t capacity, uint64_t head,
                                         uint64_t tail) {
  RingRecordView view;
  // Positions only ever move by whole cache lines; a head off a line could put the header
  // across the ring's end.
  if (head % kRingAlignment != 0) {
    view.fault = record_fault("ring head position", head, "a multiple of", kRingAlignment);
    return view;
  }
  const uint64_t published = tail - head;  // a tail behind the head wraps to a huge value
  if (published > capacity || published % kRingAlignment != 0) {
    view.fault = record_fault("bytes published in the ring", published, "a multiple of 64, at most",
                              capacity);
    return view;
  }
  const uint64_t to_end = capacity - (head & (capacity - 1));
  uint32_t header[2];
  std::memcpy(header, data + (head & (capacity - 1)), sizeof header);
  view.kind = header[0];
  view.bytes = header[1];
  if (view.kind == kRingPadding) {
    // Padding reaches exactly to the ring's end, and only once the producer has passed it.
    if (view.bytes != to_end - kRingRecordHeaderBytes) {
      view.fault =
          record_fault("padding length", view.bytes, "exactly", to_end - kRingRecordHeaderBytes);
    } else if (to_end > published) {
      view.fault =
          record_fault("padding reaching", to_end, "at most the bytes published,", published);
    }
    view.padding = true;
    view.footprint = to_end;
    return view;
  }
  view.footprint = ring_footprint(view.bytes);
  if (view.bytes > ring_max_body(capacity)) {
    view.fault = record_fault("record length", view.bytes, "at most", ring_max_body(capacity));
  } else if (view.footprint > to_end) {
    view.fault = record_fault("record length", view.bytes, "at most (to the ring's end)",
                              to_end - kRingRecordHeaderBytes);
  } else if (view.footprint > published) {
    view.fault = record_fault("record length", view.bytes, "at most (to the producer's tail)",
                              published - kRingRecordHeaderBytes);
  }
  return view;
}

}  // namespace weft::transport
