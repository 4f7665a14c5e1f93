// The TCP handshake: a challenge-response in both directions, so that each side of a
// connection proves it knows the job token before the other uses the connection, and the
// token itself never crosses the wire.
//
//   connecting rank C                            accepting rank A
//   Hello     {stream, C's rank, world size, nonce_c} ->
//                                              <- Challenge {status, A's rank, nonce_a, mac_a}
//   Proof     {status, mac_c}                  ->
//                                              <- Ack       {status, A's rank}
//
// mac_a = HMAC-SHA256(token, "weft-tcp-2 accepting" | nonce_c | nonce_a | C | A | world size),
// mac_c the same with "weft-tcp-2 connecting". C checks mac_a before it sends its own proof
// and A checks mac_c before it acknowledges: A is ready after a valid proof, C after an OK ack,
// so neither side uses a connection whose other end it has not verified. Both nonces are fresh
// for every connection, so a recorded exchange replayed later proves nothing; the direction
// label keeps one side's digest from serving as the other's; the ranks keep a digest made for
// one pair of ranks from serving another pair.
//
// Every message has a fixed size and starts with its own magic: a stranger is recognised from
// its first four bytes, and no length read from the wire is ever trusted.
// A connection that fails is closed and logged, never used. Not encrypted: after the
// handshake, frames travel in the clear (docs/RELIABILITY.md, "Authentication").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/hmac.h"

namespace weft::transport {

enum class HandshakeStatus : uint32_t { kOk = 0, kBadToken = 1, kBadRank = 2, kBadVersion = 3 };

struct Hello {
  uint32_t rank = 0;
  uint32_t world_size = 0;
  util::Nonce nonce{};
  // 0: a connection for any message; 1 and up: an extra one for pieces of striped messages
  // (streams.h).
  uint16_t stream = 0;
};

struct Challenge {
  HandshakeStatus status = HandshakeStatus::kOk;
  uint32_t rank = 0;
  util::Nonce nonce{};
  util::Digest mac{};
};

struct Proof {
  HandshakeStatus status = HandshakeStatus::kOk;
  util::Digest mac{};
};

struct Ack {
  HandshakeStatus status = HandshakeStatus::kOk;
  uint32_t rank = 0;
};

inline constexpr std::size_t kHelloBytes = 4 + 2 + 2 + 4 + 4 + util::kNonceBytes;
inline constexpr std::size_t kChallengeBytes = 4 + 4 + 4 + util::kNonceBytes + util::kDigestBytes;
inline constexpr std::size_t kProofBytes = 4 + 4 + util::kDigestBytes;
inline constexpr std::size_t kAckBytes = 12;

// What both sides' digests are computed over: everything that identifies this connection.
struct HandshakeTranscript {
  util::Nonce connecting_nonce{};
  util::Nonce accepting_nonce{};
  uint32_t connecting_rank = 0;
  uint32_t accepting_rank = 0;
  uint32_t world_size = 0;
};

enum class HandshakeSide { kConnecting, kAccepting };

// The digest `side` presents on the connection described by `transcript`.
util::Digest handshake_mac(const std::string& token, HandshakeSide side,
                           const HandshakeTranscript& transcript);

std::vector<uint8_t> encode_hello(const Hello& hello);
std::vector<uint8_t> encode_challenge(const Challenge& challenge);
std::vector<uint8_t> encode_proof(const Proof& proof);
std::vector<uint8_t> encode_ack(const Ack& ack);

// Each parser looks at the `size` bytes received so far: nullopt while the message is
// incomplete; throws weft::Error(kUnauthorized) for bytes that are not that weft message (a
// stranger, or a peer of another protocol version), as soon as they show it.
std::optional<Hello> parse_hello(const uint8_t* bytes, std::size_t size);
std::optional<Challenge> parse_challenge(const uint8_t* bytes, std::size_t size);
std::optional<Proof> parse_proof(const uint8_t* bytes, std::size_t size);
std::optional<Ack> parse_ack(const uint8_t* bytes, std::size_t size);

const char* describe(HandshakeStatus status);

}  // namespace weft::transport
