// The timeline's compact encoding: each entry is written as what changed since the one before
// it in the same segment, so that the common case (the same op, size and algorithm, one
// sequence number on) takes a header byte and two varints, about 6 bytes.
//
// It is what the spill file holds, a tenth of the ring's fixed 64-byte slots: a long trace's
// file stays small, and its JSON is read back quickly. The spill thread encodes, so the
// operations themselves never pay for it.
//
// Segments are independent: the encoder starts each from a blank previous entry, so a reader
// can decode any segment alone. A header's top bit is always set; a zero byte ends a segment
// that was sealed before it was full.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/timeline_entry.h"

namespace weft::core {

class TimelineEncoder {
 public:
  // The most bytes encode() writes for one entry.
  static constexpr std::size_t kMaxEncodedBytes = 64;

  // Writes `entry` at `out` (room for kMaxEncodedBytes); returns the bytes written.
  std::size_t encode(const TimelineEntry& entry, uint8_t* out);
  // The next entry starts a segment.
  void start_segment() { previous_ = TimelineEntry{}; }

 private:
  TimelineEntry previous_;
};

// Calls `visit` on each entry of a segment's `size` bytes, stopping at its end marker.
void decode_timeline_segment(const uint8_t* data, std::size_t size,
                             const std::function<void(const TimelineEntry&)>& visit);

}  // namespace weft::core
