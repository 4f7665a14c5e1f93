// The frame header decoder and the check every TCP frame passes before anything is matched or
// allocated for it (frame_header.h: decode, frame_header_problem), on arbitrary bytes.
// Properties: neither crashes nor reads past the 64 bytes; a header that decodes re-encodes to
// one that decodes the same; an accepted frame is within the limits it was checked against.
#include <cstdint>
#include <cstdlib>

#include "seeds.h"
#include "transport/frame_header.h"
#include "weft/error.h"

namespace {

using weft::fuzz::Bytes;
using namespace weft::transport;

constexpr FrameLimits kLimits{kLargestMessageBytes, 64 * 1024};

Bytes encoded(FrameKind kind, uint32_t source, uint64_t bytes) {
  FrameHeader header;
  header.kind = kind;
  header.source = source;
  header.context = 3;
  header.tag = 11;
  header.bytes = bytes;
  Bytes out(kFrameHeaderBytes);
  encode(header, out.data());
  out.push_back(0);  // the sender's rank for frame_header_problem
  return out;
}

bool same(const FrameHeader& a, const FrameHeader& b) {
  return a.kind == b.kind && a.operation_tagged == b.operation_tagged && a.source == b.source &&
         a.context == b.context && a.tag == b.tag && a.bytes == b.bytes &&
         a.signature == b.signature && a.stripes == b.stripes;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  weft::fuzz::write_seeds_if_asked(
      {encoded(FrameKind::kData, 0, 4096), encoded(FrameKind::kGoodbye, 0, 0),
       encoded(FrameKind::kPeerFailed, 0, 100), encoded(FrameKind::kContextAbort, 0, 65536)});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kFrameHeaderBytes) return 0;
  // An exact-size copy: ASan sees any read past the header.
  Bytes header_bytes(data, data + kFrameHeaderBytes);
  const int sender = size > kFrameHeaderBytes ? data[kFrameHeaderBytes] % 8 : 0;
  FrameHeader header;
  try {
    header = decode(header_bytes.data());
  } catch (const weft::Error&) {
    return 0;  // not a frame: the connection is dropped
  }
  Bytes again(kFrameHeaderBytes);
  encode(header, again.data());
  if (!same(decode(again.data()), header)) std::abort();
  if (frame_header_problem(header, sender, kLimits).empty()) {
    bool within =
        static_cast<int>(header.source) == sender && header.stripes <= kMaxStripes &&
        header.bytes <= (header.kind == FrameKind::kData || header.kind == FrameKind::kStripe
                             ? kLimits.data_bytes
                             : kLimits.control_bytes);
    if (!within) std::abort();
  }
  return 0;
}
