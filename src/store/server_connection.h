// ServerConnection — the TCP store server's state for one client: its socket, buffered input
// and output, parked request, and the clocks its stall timeout is counted from. It answers
// the questions the event loop asks about the client's flow (is a whole request here, how much
// more input to take, by when must it progress) and does no I/O itself.
//
// The limits it applies, per client: replies waiting to be sent stop its next request at
// kOutputHighWater (a client that pipelines requests and never reads holds at most that plus
// one reply); buffered requests stop the reading at kInputHighWater, or at the end of the next
// request when that is larger, after which TCP's flow control holds the client back.
// Not thread-safe: the event loop owns it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "store/byte_queue.h"
#include "store/command_runner.h"
#include "store/store_protocol.h"
#include "util/hmac.h"
#include "util/socket.h"

namespace weft::store {

inline constexpr std::size_t kOutputHighWater = 1u << 20;
inline constexpr std::size_t kInputHighWater = 1u << 20;

struct ServerConnection {
  using Clock = std::chrono::steady_clock;

  // The length its next request announces (at least its header is buffered).
  uint32_t next_length() const {
    uint32_t length;
    std::memcpy(&length, in.data(), sizeof length);
    return length;
  }

  // Whether the next request is all here, or announced over the limit (then refused whole).
  bool request_ready(std::size_t max_frame) const {
    if (in.size() < kFrameHeaderBytes) return false;
    uint32_t length = next_length();
    return length > max_frame || in.size() >= kFrameHeaderBytes + length;
  }

  // How much more input the server takes from it now: up to kInputHighWater, or to the end of
  // its next request when that is larger (a request is served only when whole).
  std::size_t input_room(std::size_t max_frame) const {
    if (close_after_write) return 0;
    std::size_t want = kInputHighWater;
    if (in.size() >= kFrameHeaderBytes) {
      uint32_t length = next_length();
      if (length <= max_frame) want = std::max(want, kFrameHeaderBytes + length);
    }
    return in.size() >= want ? 0 : want - in.size();
  }

  // When it is closed unless it makes progress, if it is in a state that may stall: connected
  // without a whole first request, or without having authenticated (a store with a token); part of
  // a request sent; replies waiting for it to read them. Idle between requests, or parked in a get
  // or wait, is not a stall: none.
  std::optional<Clock::time_point> stall_deadline(std::size_t max_frame,
                                                  std::chrono::milliseconds timeout) const {
    std::optional<Clock::time_point> deadline;
    auto at_most = [&](Clock::time_point when) {
      deadline = deadline ? std::min(*deadline, when) : when;
    };
    if (!served_any || !authenticated) at_most(accepted_at + timeout);
    if (!in.empty() && !request_ready(max_frame)) at_most(input_at + timeout);
    if (!out.empty()) at_most(output_at + timeout);
    return deadline;
  }

  util::Fd fd;
  std::string peer;
  ByteQueue in{kInputHighWater};
  ByteQueue out{kOutputHighWater};
  std::optional<Parked> parked;
  Clock::time_point accepted_at;
  Clock::time_point input_at;   // last bytes received
  Clock::time_point output_at;  // last bytes sent, or when unsent replies began to wait for room
  uint32_t watched = 0;         // the epoll events watched now
  bool served_any = false;      // a whole request arrived: past its first-request deadline
  // Passed the challenge-response (store_auth.h), or the store has no token: only then are its
  // requests served. `auth` holds the nonces between its kAuthHello and its kAuthProof.
  bool authenticated = false;
  struct AuthExchange {
    util::Nonce client_nonce;
    util::Nonce server_nonce;
  };
  std::optional<AuthExchange> auth;
  bool close_after_write = false;
  bool queued = false;  // in the loop's backlog: requests left after its turn
  bool gone = false;    // dropped at the end of the loop's turn
};

}  // namespace weft::store
