// The TCP handshake: the connecting rank presents the job token and its rank; the accepting
// rank answers with a status. A connection that fails it is closed and logged, never used.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weft::transport {

inline constexpr std::size_t kMaxTokenBytes = 256;

enum class HandshakeStatus : uint32_t { kOk = 0, kBadToken = 1, kBadRank = 2, kBadVersion = 3 };

struct Hello {
  uint32_t rank = 0;
  uint32_t world_size = 0;
  std::string token;
};

struct Ack {
  HandshakeStatus status = HandshakeStatus::kOk;
  uint32_t rank = 0;
};

inline constexpr std::size_t kAckBytes = 12;

std::vector<uint8_t> encode_hello(const Hello& hello);
std::vector<uint8_t> encode_ack(const Ack& ack);

// Parses a Hello from the bytes received so far: nullopt while incomplete; throws
// weft::Error(kUnauthorized) for bytes that are not a weft hello (a stranger).
std::optional<Hello> parse_hello(const std::vector<uint8_t>& received);
// Parses an Ack from exactly kAckBytes; throws kUnauthorized for garbage.
Ack parse_ack(const uint8_t* bytes);

const char* describe(HandshakeStatus status);

}  // namespace weft::transport
