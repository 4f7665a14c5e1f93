#include "transport/tcp/handshake.h"

#include <algorithm>
#include <cstring>

#include "util/byte_codec.h"
#include "weft/error.h"

namespace weft::transport {

namespace {

constexpr uint32_t kHelloMagic = 0x48544657;      // "WFTH"
constexpr uint32_t kChallengeMagic = 0x43544657;  // "WFTC"
constexpr uint32_t kProofMagic = 0x50544657;      // "WFTP"
constexpr uint32_t kAckMagic = 0x41544657;        // "WFTA"
// 1 sent the token in the clear; 2 is the challenge-response.
constexpr uint16_t kHandshakeVersion = 2;

template <std::size_t N>
void put_array(util::ByteWriter& writer, const std::array<uint8_t, N>& bytes) {
  writer.put_bytes(bytes.data(), bytes.size());
}

template <std::size_t N>
void copy_array(const uint8_t* from, std::array<uint8_t, N>& to) {
  std::memcpy(to.data(), from, N);
}

// Refuses bytes whose first four are not `magic`, as soon as four have come; then tells
// whether the whole fixed-size message is here. Bytes beyond it are refused too: the other
// side sends nothing more before it has our answer.
bool complete_message(const uint8_t* bytes, std::size_t size, uint32_t magic, std::size_t whole,
                      const char* what, bool more_may_follow = false) {
  if (size >= 4) {
    uint32_t received;
    std::memcpy(&received, bytes, sizeof received);
    if (received != magic) {
      throw Error(ErrorCode::kUnauthorized, std::string("expected a weft handshake ") + what +
                                                " and got something else (not a weft rank)");
    }
  }
  if (size < whole) return false;
  if (size > whole && !more_may_follow) {
    throw Error(ErrorCode::kUnauthorized, std::string("bytes after the handshake ") + what);
  }
  return true;
}

HandshakeStatus status_from(uint32_t value) {
  if (value > static_cast<uint32_t>(HandshakeStatus::kBadVersion)) {
    throw Error(ErrorCode::kUnauthorized, "unknown handshake status " + std::to_string(value));
  }
  return static_cast<HandshakeStatus>(value);
}

}  // namespace

util::Digest handshake_mac(const std::string& token, HandshakeSide side,
                           const HandshakeTranscript& transcript) {
  std::vector<uint8_t> message;
  util::ByteWriter writer(message);
  const char* label =
      side == HandshakeSide::kConnecting ? "weft-tcp-2 connecting" : "weft-tcp-2 accepting";
  writer.put_bytes(label, std::strlen(label) + 1);  // with its NUL: labels are not prefixes
  put_array(writer, transcript.connecting_nonce);
  put_array(writer, transcript.accepting_nonce);
  writer.put<uint32_t>(transcript.connecting_rank);
  writer.put<uint32_t>(transcript.accepting_rank);
  writer.put<uint32_t>(transcript.world_size);
  return util::hmac_sha256(token, message);
}

std::vector<uint8_t> encode_hello(const Hello& hello) {
  std::vector<uint8_t> out;
  util::ByteWriter writer(out);
  writer.put<uint32_t>(kHelloMagic);
  writer.put<uint16_t>(kHandshakeVersion);
  writer.put<uint16_t>(hello.stream);
  writer.put<uint32_t>(hello.rank);
  writer.put<uint32_t>(hello.world_size);
  put_array(writer, hello.nonce);
  return out;
}

std::vector<uint8_t> encode_challenge(const Challenge& challenge) {
  std::vector<uint8_t> out;
  util::ByteWriter writer(out);
  writer.put<uint32_t>(kChallengeMagic);
  writer.put<uint32_t>(static_cast<uint32_t>(challenge.status));
  writer.put<uint32_t>(challenge.rank);
  put_array(writer, challenge.nonce);
  put_array(writer, challenge.mac);
  return out;
}

std::vector<uint8_t> encode_proof(const Proof& proof) {
  std::vector<uint8_t> out;
  util::ByteWriter writer(out);
  writer.put<uint32_t>(kProofMagic);
  writer.put<uint32_t>(static_cast<uint32_t>(proof.status));
  put_array(writer, proof.mac);
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

std::optional<Hello> parse_hello(const uint8_t* bytes, std::size_t size) {
  // The magic first, then the version as soon as its bytes are here: a hello of another
  // release may have another size, and must be named for what it is.
  bool whole =
      complete_message(bytes, std::min(size, kHelloBytes), kHelloMagic, kHelloBytes, "hello");
  if (size >= 6) {
    uint16_t version;
    std::memcpy(&version, bytes + 4, sizeof version);
    if (version != kHandshakeVersion) {
      throw Error(ErrorCode::kUnauthorized,
                  "handshake version " + std::to_string(version) + " is not ours (" +
                      std::to_string(kHandshakeVersion) + "): a rank of another weft release?");
    }
  }
  if (!whole) return std::nullopt;
  if (size > kHelloBytes) throw Error(ErrorCode::kUnauthorized, "bytes after the handshake hello");
  util::ByteReader reader(bytes, kHelloBytes);
  reader.get<uint32_t>();
  reader.get<uint16_t>();
  Hello hello;
  hello.stream = reader.get<uint16_t>();
  hello.rank = reader.get<uint32_t>();
  hello.world_size = reader.get<uint32_t>();
  copy_array(bytes + kHelloBytes - util::kNonceBytes, hello.nonce);
  return hello;
}

std::optional<Challenge> parse_challenge(const uint8_t* bytes, std::size_t size) {
  if (!complete_message(bytes, size, kChallengeMagic, kChallengeBytes, "challenge")) {
    return std::nullopt;
  }
  util::ByteReader reader(bytes, kChallengeBytes);
  reader.get<uint32_t>();
  Challenge challenge;
  challenge.status = status_from(reader.get<uint32_t>());
  challenge.rank = reader.get<uint32_t>();
  copy_array(bytes + 12, challenge.nonce);
  copy_array(bytes + 12 + util::kNonceBytes, challenge.mac);
  return challenge;
}

std::optional<Proof> parse_proof(const uint8_t* bytes, std::size_t size) {
  if (!complete_message(bytes, size, kProofMagic, kProofBytes, "proof")) return std::nullopt;
  util::ByteReader reader(bytes, kProofBytes);
  reader.get<uint32_t>();
  Proof proof;
  proof.status = status_from(reader.get<uint32_t>());
  copy_array(bytes + 8, proof.mac);
  return proof;
}

std::optional<Ack> parse_ack(const uint8_t* bytes, std::size_t size) {
  // Frames may follow an ack at once: the accepting side is ready when it sends it.
  if (!complete_message(bytes, size, kAckMagic, kAckBytes, "ack", /*more_may_follow=*/true)) {
    return std::nullopt;
  }
  util::ByteReader reader(bytes, kAckBytes);
  reader.get<uint32_t>();
  Ack ack;
  ack.status = status_from(reader.get<uint32_t>());
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
