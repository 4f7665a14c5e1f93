// The TCP handshake's parsers (transport/tcp/handshake.h) on arbitrary bytes, as a stranger can
// send them: each message's parser is fed every prefix the socket could deliver.
// Properties: no crash and no read past what was received; a parser says "incomplete" until the
// whole message is there and never reads more; what it accepts re-encodes to a message that
// parses back to the same (reserved bits are not kept, so the bytes themselves may differ).
// The state machine itself lives in TcpPath around sockets (tcp_handshake_test.cc drives
// it); its decisions are made on these parsers' results.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>

#include "seeds.h"
#include "transport/tcp/handshake.h"
#include "weft/error.h"

namespace {

using weft::fuzz::Bytes;
using namespace weft::transport;

// Feeds every prefix of `data` to `parse`; checks what it accepts.
template <typename Parse, typename Encode>
void feed(const uint8_t* data, std::size_t size, std::size_t message_bytes, Parse parse,
          Encode encode) {
  for (std::size_t got = 0; got <= size && got <= message_bytes + 1; ++got) {
    Bytes received(data, data + got);  // exact size: ASan sees a read past it
    try {
      auto message = parse(received.data(), received.size());
      if (!message) {
        if (got >= message_bytes) std::abort();  // a whole message must be decided
        continue;
      }
      if (got < message_bytes) std::abort();  // accepted before it was whole
      Bytes again = encode(*message);
      if (again.size() != message_bytes) std::abort();
      auto reparsed = parse(again.data(), again.size());
      if (!reparsed || encode(*reparsed) != again) std::abort();
      return;
    } catch (const weft::Error&) {
      return;  // a stranger: refused as soon as the bytes show it
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Hello hello{1, 4, {}};
  hello.nonce.fill(7);
  Challenge challenge{HandshakeStatus::kOk, 0, {}, {}};
  challenge.nonce.fill(9);
  challenge.mac = handshake_mac("token", HandshakeSide::kAccepting, HandshakeTranscript{});
  Proof proof{HandshakeStatus::kBadToken, {}};
  Ack ack{HandshakeStatus::kOk, 3};
  // The first byte picks the parser (seeds.h's seeds carry it too).
  auto tagged = [](uint8_t which, Bytes message) {
    message.insert(message.begin(), which);
    return message;
  };
  weft::fuzz::write_seeds_if_asked({tagged(0, encode_hello(hello)),
                                    tagged(1, encode_challenge(challenge)),
                                    tagged(2, encode_proof(proof)), tagged(3, encode_ack(ack))});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t which = data[0] % 4;
  ++data;
  --size;
  switch (which) {
    case 0:
      feed(data, size, kHelloBytes, parse_hello, encode_hello);
      break;
    case 1:
      feed(data, size, kChallengeBytes, parse_challenge, encode_challenge);
      break;
    case 2:
      feed(data, size, kProofBytes, parse_proof, encode_proof);
      break;
    default:
      feed(data, size, kAckBytes, parse_ack, encode_ack);
      break;
  }
  return 0;
}
