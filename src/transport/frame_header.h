// FrameHeader — the fixed 64-byte header in front of every message between two ranks.
//
// It carries what a receiver needs to match and check a message before touching any buffer:
// the matching key (source rank, context, tag), the payload length, and the sender's
// Signature, an opaque 24-byte description of the operation the sender is running (the core
// writes it; the transport only compares it with the receiver's). Little-endian on the wire.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

namespace weft::transport {

inline constexpr std::size_t kFrameHeaderBytes = 64;
inline constexpr uint32_t kFrameMagic = 0x54464557;  // "WEFT"
inline constexpr uint16_t kProtocolVersion = 1;

struct Signature {
  std::array<uint8_t, 24> bytes{};
  // As three words: the defaulted comparison calls memcmp, a function call on the path of
  // every small same-host collective (they compare signatures at every call).
  bool operator==(const Signature& other) const {
    uint64_t mine[3], theirs[3];
    std::memcpy(mine, bytes.data(), sizeof mine);
    std::memcpy(theirs, other.bytes.data(), sizeof theirs);
    return ((mine[0] ^ theirs[0]) | (mine[1] ^ theirs[1]) | (mine[2] ^ theirs[2])) == 0;
  }
};

enum class FrameKind : uint8_t {
  kData = 1,          // a message for a posted (or later) receive
  kGoodbye = 2,       // the sender shuts down cleanly; no more frames follow
  kPeerFailed = 3,    // "rank `tag` failed": payload is the reason
  kContextAbort = 4,  // "context `context` is aborted": payload is the reason
  // A piece of a message striped across several connections (tcp/streams.h): its payload
  // goes `context` bytes into the message whose header came on the peer's first connection.
  kStripe = 5,
};

// A message is split across at most this many connections of one peer pair.
inline constexpr uint32_t kMaxStripes = 16;

// Tags whose bits from kOperationShift up are equal belong to one operation (the low bits
// number its messages). For messages marked operation_tagged, a receiver that finds a message
// of the same operation from the same sender carrying a different signature reports a
// mismatch at once, even though the tags differ (the two sides run different algorithms).
inline constexpr int kOperationShift = 20;

struct FrameHeader {
  FrameKind kind = FrameKind::kData;
  bool operation_tagged = false;
  uint32_t source = 0;  // sender's rank in the world
  uint64_t context = 0;
  uint64_t tag = 0;
  uint64_t bytes = 0;  // payload length (kData: of the whole message, however striped)
  Signature signature;
  // kData: the message is split across this many connections (0 or 1: sent whole on this one,
  // which then carries only its first piece; tcp/streams.h).
  uint32_t stripes = 0;
};

// No message is longer: 2^47 bytes (128 TiB) is more than a process can address, so a frame
// announcing more comes from a broken peer.
inline constexpr uint64_t kLargestMessageBytes = uint64_t{1} << 47;

// The lengths a receiver accepts in a frame's header.
struct FrameLimits {
  uint64_t data_bytes = kLargestMessageBytes;
  uint64_t control_bytes = 0;
};

void encode(const FrameHeader& header, uint8_t* out);
// Throws weft::Error(kInternal) for a frame with a wrong magic or version: a corrupt stream.
FrameHeader decode(const uint8_t* in);
// Empty when `header` is a frame rank `sender` may send: its own rank as source, a known kind,
// a length within `limits`. Otherwise what is wrong, as "sent ..." naming the value and the
// limit, for an error about the sender.
std::string frame_header_problem(const FrameHeader& header, int sender, const FrameLimits& limits);

}  // namespace weft::transport
