// How long a rank waits for a peer's connection that is between its hello and its proof before
// it dials that peer itself, or before it writes on a dial that became ready meanwhile
// (TcpPath: the dial's `held` flag).
//
// Why wait: two ranks that dial each other at once make two connections, and only a dial that
// carried no message may give its role to the other (messages keep their order only on one
// connection): when both carry data, each acknowledges every small message with a segment of its
// own. A rank that sees the peer's hello knows a connection is coming; once its proof is in,
// both ranks send on it. The proof follows the hello by one round trip (our challenge, its
// answer), so twice the kernel's round-trip time covers it; the floor covers a peer whose process
// is not scheduled at once. Bounded, because a hello proves nothing: a stranger that claims a
// rank and never proves it delays our first messages to that rank by this much, once per dial.
//
// Thread-safety: a function of values.
#pragma once

#include <algorithm>
#include <chrono>

namespace weft::transport {

inline constexpr std::chrono::milliseconds kProofWaitFloor{10};

// `configured`: TcpPathOptions::proof_wait (0: from `round_trip`, the connection's smoothed
// round-trip time). Never more than the handshake's own timeout.
inline std::chrono::steady_clock::duration proof_wait(
    std::chrono::milliseconds configured, std::chrono::steady_clock::duration round_trip,
    std::chrono::milliseconds handshake_timeout) {
  std::chrono::steady_clock::duration wait = configured;
  if (configured.count() == 0) wait = 2 * round_trip + kProofWaitFloor;
  return std::min<std::chrono::steady_clock::duration>(wait, handshake_timeout);
}

}  // namespace weft::transport
