#include "transport/frame_header.h"

#include <cstring>
#include <string>

#include "weft/error.h"

namespace weft::transport {

namespace {

template <typename T>
void put(uint8_t*& out, T value) {
  std::memcpy(out, &value, sizeof value);
  out += sizeof value;
}

template <typename T>
T get(const uint8_t*& in) {
  T value;
  std::memcpy(&value, in, sizeof value);
  in += sizeof value;
  return value;
}

}  // namespace

void encode(const FrameHeader& header, uint8_t* out) {
  put<uint32_t>(out, kFrameMagic);
  put<uint16_t>(out, kProtocolVersion);
  put<uint8_t>(out, static_cast<uint8_t>(header.kind));
  put<uint8_t>(out, header.operation_tagged ? 1 : 0);
  put<uint32_t>(out, header.source);
  put<uint32_t>(out, header.stripes);
  put<uint64_t>(out, header.context);
  put<uint64_t>(out, header.tag);
  put<uint64_t>(out, header.bytes);
  std::memcpy(out, header.signature.bytes.data(), header.signature.bytes.size());
}

FrameHeader decode(const uint8_t* in) {
  auto magic = get<uint32_t>(in);
  auto version = get<uint16_t>(in);
  if (magic != kFrameMagic || version != kProtocolVersion) {
    throw Error(ErrorCode::kInternal, "corrupt frame header (magic " + std::to_string(magic) +
                                          ", version " + std::to_string(version) + ")");
  }
  FrameHeader header;
  header.kind = static_cast<FrameKind>(get<uint8_t>(in));
  header.operation_tagged = (get<uint8_t>(in) & 1) != 0;
  header.source = get<uint32_t>(in);
  header.stripes = get<uint32_t>(in);
  header.context = get<uint64_t>(in);
  header.tag = get<uint64_t>(in);
  header.bytes = get<uint64_t>(in);
  std::memcpy(header.signature.bytes.data(), in, header.signature.bytes.size());
  return header;
}

std::string frame_header_problem(const FrameHeader& header, int sender, const FrameLimits& limits) {
  if (static_cast<int64_t>(header.source) != sender) {
    return "sent a frame as rank " + std::to_string(header.source);
  }
  if (header.kind == FrameKind::kData || header.kind == FrameKind::kStripe) {
    if (header.kind == FrameKind::kData && header.stripes > kMaxStripes) {
      return "sent a message striped across " + std::to_string(header.stripes) +
             " connections (the limit is " + std::to_string(kMaxStripes) + ")";
    }
    if (header.kind == FrameKind::kStripe && header.stripes != 0) {
      return "sent a piece of a striped message that claims stripes of its own";
    }
    if (header.bytes <= limits.data_bytes) return "";
    return "sent a data frame of " + std::to_string(header.bytes) +
           " bytes, more than any message can be (the limit is " +
           std::to_string(limits.data_bytes) + " bytes)";
  }
  if (header.kind != FrameKind::kGoodbye && header.kind != FrameKind::kPeerFailed &&
      header.kind != FrameKind::kContextAbort) {
    return "sent a frame of unknown kind " + std::to_string(static_cast<int>(header.kind));
  }
  if (header.stripes != 0) return "sent a control frame that claims stripes";
  if (header.bytes <= limits.control_bytes) return "";
  return "sent a control frame of " + std::to_string(header.bytes) + " bytes (the limit is " +
         std::to_string(limits.control_bytes) + " bytes)";
}

}  // namespace weft::transport
