#include "transport/tcp/handshake.h"

#include "util/byte_codec.h"
#include "weft/error.h"

namespace weft::transport {

namespace {
constexpr uint32_t kHelloMagic = 0x48544657;  // "WFTH"
constexpr uint32_t kAckMagic = 0x41544657;    // "WFTA"
constexpr uint16_t kHandshakeVersion = 1;
constexpr std::size_t kHelloFixedBytes = 4 + 2 + 2 + 4 + 4 + 4;
}  // namespace

std::vector<uint8_t> encode_hello(const Hello& hello) {
  std::vector<uint8_t> out;
  util::ByteWriter writer(out);
  writer.put<uint32_t>(kHelloMagic);
  writer.put<uint16_t>(kHandshakeVersion);
  writer.put<uint16_t>(0);
  writer.put<uint32_t>(hello.rank);
  writer.put<uint32_t>(hello.world_size);
  writer.put_string(hello.token.substr(0, kMaxTokenBytes));
  return out;
}

std::vector<uint8_t> encode_ack(const Ack& ack) {
  std::vector<uint8_t> out;
  util::ByteWriter writer(out);
  writer.put<uint32_t>(kAckMagic);
  writer.put<uint32_t>(static_cast<uint32_t>(ack.status));
  writer.put<uint32_t>(ack.rank);
  return out;
}

std::optional<Hello> parse_hello(const std::vector<uint8_t>& received) {
  if (received.size() >= 4) {
    util::ByteReader magic(received.data(), 4);
    if (magic.get<uint32_t>() != kHelloMagic) {
      throw Error(ErrorCode::kUnauthorized, "not a weft handshake");
    }
  }
  if (received.size() < kHelloFixedBytes) return std::nullopt;
  util::ByteReader reader(received.data(), received.size());
  reader.get<uint32_t>();
  uint16_t version = reader.get<uint16_t>();
  reader.get<uint16_t>();
  Hello hello;
  hello.rank = reader.get<uint32_t>();
  hello.world_size = reader.get<uint32_t>();
  uint32_t token_bytes = reader.get<uint32_t>();
  if (version != kHandshakeVersion) {
    throw Error(ErrorCode::kUnauthorized,
                "handshake version " + std::to_string(version) + " is not ours");
  }
  if (token_bytes > kMaxTokenBytes) {
    throw Error(ErrorCode::kUnauthorized, "oversized token in handshake");
  }
  if (reader.remaining() < token_bytes) return std::nullopt;
  if (reader.remaining() > token_bytes) {
    throw Error(ErrorCode::kUnauthorized, "bytes after the handshake");
  }
  hello.token.assign(reinterpret_cast<const char*>(received.data()) + kHelloFixedBytes,
                     token_bytes);
  return hello;
}

Ack parse_ack(const uint8_t* bytes) {
  util::ByteReader reader(bytes, kAckBytes);
  if (reader.get<uint32_t>() != kAckMagic) {
    throw Error(ErrorCode::kUnauthorized, "the peer answered something that is not a weft ack");
  }
  Ack ack;
  ack.status = static_cast<HandshakeStatus>(reader.get<uint32_t>());
  ack.rank = reader.get<uint32_t>();
  return ack;
}

const char* describe(HandshakeStatus status) {
  switch (status) {
    case HandshakeStatus::kOk:
      return "ok";
    case HandshakeStatus::kBadToken:
      return "job token mismatch";
    case HandshakeStatus::kBadRank:
      return "rank or world size not of this job";
    case HandshakeStatus::kBadVersion:
      return "protocol version mismatch";
  }
  return "unknown status";
}

}  // namespace weft::transport
