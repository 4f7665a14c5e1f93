// A rank played by hand: a raw connection that completes the real handshake (it knows the job
// token) and is then driven byte by byte, for tests of what a peer may send, or leave unread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "support/wire_tap.h"
#include "transport/frame_header.h"
#include "transport/tcp/handshake.h"
#include "util/hmac.h"
#include "util/socket.h"

namespace weft::testing {

// A connection to `rank0` (of a world of 2) as rank 1, authenticated with `token`; invalid when
// the handshake failed. `stream` above 0: one of rank 1's extra connections, for pieces of
// striped messages.
inline util::Fd authenticated_as_rank1(const util::SocketAddress& rank0, const std::string& token,
                                       uint16_t stream = 0) {
  using namespace transport;
  using namespace std::chrono_literals;
  util::Fd fd = connect_to(rank0);
  if (!fd.valid()) return {};
  HandshakeTranscript transcript;
  transcript.connecting_nonce = util::fresh_nonce();
  transcript.connecting_rank = 1;
  transcript.accepting_rank = 0;
  transcript.world_size = 2;
  send_bytes(fd.get(), encode_hello({1, 2, transcript.connecting_nonce, stream}));
  Bytes8 answer = read_for(fd.get(), kChallengeBytes, 5s);
  std::optional<Challenge> challenge = parse_challenge(answer.data(), answer.size());
  if (!challenge || challenge->status != HandshakeStatus::kOk) return {};
  transcript.accepting_nonce = challenge->nonce;
  send_bytes(fd.get(),
             encode_proof({HandshakeStatus::kOk,
                           handshake_mac(token, HandshakeSide::kConnecting, transcript)}));
  answer = read_for(fd.get(), kAckBytes, 5s);
  std::optional<Ack> ack = parse_ack(answer.data(), answer.size());
  if (!ack || ack->status != HandshakeStatus::kOk) return {};
  return fd;
}

// The header of a data frame from rank 1, as a hand-driven rank writes it.
inline Bytes8 rank1_data_header(uint64_t context, uint64_t tag, uint64_t bytes,
                                uint32_t stripes = 0) {
  transport::FrameHeader header;
  header.kind = transport::FrameKind::kData;
  header.source = 1;
  header.context = context;
  header.tag = tag;
  header.bytes = bytes;
  header.stripes = stripes;
  Bytes8 encoded(transport::kFrameHeaderBytes);
  transport::encode(header, encoded.data());
  return encoded;
}

}  // namespace weft::testing
