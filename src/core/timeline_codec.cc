#include "core/timeline_codec.h"

#include <cstring>

namespace weft::core {

namespace {

enum Changed : uint8_t {
  kOp = 1 << 0,
  kAlgorithm = 1 << 1,
  kBytes = 1 << 2,
  kDType = 1 << 3,
  kPeer = 1 << 4,
  kOutcome = 1 << 5,
  kSeqJump = 1 << 6,  // not the previous entry's seq + 1
  kHeader = 1 << 7,   // always set: a zero byte is the end of a segment
};

uint64_t zigzag(int64_t value) {
  return (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
}
int64_t unzigzag(uint64_t value) {
  return static_cast<int64_t>(value >> 1) ^ -static_cast<int64_t>(value & 1);
}

uint8_t* put_varint(uint8_t* out, uint64_t value) {
  while (value >= 0x80) {
    *out++ = static_cast<uint8_t>(value | 0x80);
    value >>= 7;
  }
  *out++ = static_cast<uint8_t>(value);
  return out;
}

uint8_t* put_pointer(uint8_t* out, const char* pointer) {
  std::memcpy(out, &pointer, sizeof pointer);
  return out + sizeof pointer;
}

// Reads within [in, end); false when the bytes run out first.
bool get_varint(const uint8_t*& in, const uint8_t* end, uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64 && in < end; shift += 7) {
    uint8_t byte = *in++;
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

bool get_pointer(const uint8_t*& in, const uint8_t* end, const char*& pointer) {
  if (end - in < static_cast<std::ptrdiff_t>(sizeof pointer)) return false;
  std::memcpy(&pointer, in, sizeof pointer);
  in += sizeof pointer;
  return true;
}

bool get_byte(const uint8_t*& in, const uint8_t* end, uint8_t& byte) {
  if (in >= end) return false;
  byte = *in++;
  return true;
}

}  // namespace

std::size_t TimelineEncoder::encode(const TimelineEntry& entry, uint8_t* out) {
  const TimelineEntry& before = previous_;
  uint8_t header = kHeader;
  if (entry.op != before.op) header |= kOp;
  if (entry.algorithm != before.algorithm) header |= kAlgorithm;
  if (entry.bytes != before.bytes) header |= kBytes;
  if (entry.dtype != before.dtype) header |= kDType;
  if (entry.peer != before.peer) header |= kPeer;
  if (entry.outcome != before.outcome) header |= kOutcome;
  if (entry.seq != before.seq + 1) header |= kSeqJump;

  uint8_t* at = out;
  *at++ = header;
  at = put_varint(at, zigzag(entry.start_ticks - before.start_ticks));
  int64_t duration = entry.end_ticks - entry.start_ticks;
  at = put_varint(at, static_cast<uint64_t>(duration > 0 ? duration : 0));
  if (header & kOp) at = put_pointer(at, entry.op);
  if (header & kAlgorithm) at = put_pointer(at, entry.algorithm);
  if (header & kBytes) at = put_varint(at, zigzag(entry.bytes));
  if (header & kDType) *at++ = static_cast<uint8_t>(entry.dtype);
  if (header & kPeer) at = put_varint(at, zigzag(entry.peer));
  if (header & kOutcome) *at++ = static_cast<uint8_t>(entry.outcome);
  if (header & kSeqJump) at = put_varint(at, zigzag(entry.seq - (before.seq + 1)));
  previous_ = entry;
  return static_cast<std::size_t>(at - out);
}

void decode_timeline_segment(const uint8_t* data, std::size_t size,
                             const std::function<void(const TimelineEntry&)>& visit) {
  const uint8_t* in = data;
  const uint8_t* end = data + size;
  TimelineEntry entry;
  while (in < end && (*in & kHeader) != 0) {
    uint8_t header = *in++;
    uint64_t start_delta = 0;
    uint64_t duration = 0;
    if (!get_varint(in, end, start_delta) || !get_varint(in, end, duration)) return;
    entry.start_ticks += unzigzag(start_delta);
    entry.end_ticks = entry.start_ticks + static_cast<int64_t>(duration);
    uint64_t value = 0;
    uint8_t byte = 0;
    if ((header & kOp) && !get_pointer(in, end, entry.op)) return;
    if ((header & kAlgorithm) && !get_pointer(in, end, entry.algorithm)) return;
    if (header & kBytes) {
      if (!get_varint(in, end, value)) return;
      entry.bytes = unzigzag(value);
    }
    if (header & kDType) {
      if (!get_byte(in, end, byte)) return;
      entry.dtype = static_cast<DType>(byte);
    }
    if (header & kPeer) {
      if (!get_varint(in, end, value)) return;
      entry.peer = static_cast<int32_t>(unzigzag(value));
    }
    if (header & kOutcome) {
      if (!get_byte(in, end, byte)) return;
      entry.outcome = static_cast<OpOutcome>(byte);
    }
    int64_t seq_jump = 0;
    if (header & kSeqJump) {
      if (!get_varint(in, end, value)) return;
      seq_jump = unzigzag(value);
    }
    entry.seq = entry.seq + 1 + seq_jump;
    visit(entry);
  }
}

}  // namespace weft::core
