// CandidateDial — the state of one connection attempt to a peer that published several
// addresses (peer_candidates.h): which address is being tried, until when, and how the earlier
// ones failed, for the log line and the error that name them.
//
// Budgets: the connects, all candidates together, have the connect window the transport gives
// (WEFT_HANDSHAKE_TIMEOUT's); each candidate but the last may take at most kConnectBudget of it,
// so that an address whose packets vanish cannot eat the time of the next, and the last gets
// what is left. Every candidate is tried at least kConnectFloor, even past the window, so that a
// slow first one never leaves the others untried. (The handshake on a connected candidate has
// its own deadline, kept by the transport.)
//
// Thread-safety: none; the transport guards it with its lock.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "util/socket.h"

namespace weft::transport {

class CandidateDial {
 public:
  using Clock = std::chrono::steady_clock;
  // A connect that takes longer on a network that works has lost its first SYN and waits for
  // the retransmission (1 s on Linux): 2 s lets it come once.
  static constexpr std::chrono::milliseconds kConnectBudget{2000};
  static constexpr std::chrono::milliseconds kConnectFloor{250};

  // `candidates` in the order to try them (not empty).
  CandidateDial(std::vector<util::SocketAddress> candidates, std::chrono::milliseconds window,
                Clock::time_point now);

  const util::SocketAddress& current() const { return candidates_[index_]; }
  std::size_t size() const { return candidates_.size(); }
  // When the current candidate's connect must have succeeded.
  Clock::time_point connect_deadline() const { return connect_deadline_; }
  // How long the current candidate was given to connect, for "timed out after N ms".
  std::chrono::milliseconds connect_budget() const { return connect_budget_; }

  // Notes how the current candidate failed ("refused", "timed out after 2000 ms") and moves to
  // the next; false when it was the last (its failure is noted all the same).
  bool advance(const std::string& outcome, Clock::time_point now);

  // "10.0.0.1:5000: refused, [fd00::1]:5000: timed out after 2000 ms": the failures so far, in
  // the order tried; empty when the first candidate is still the current one.
  std::string failures() const;
  // Every candidate, "10.0.0.1:5000 or 127.0.0.1:5000", for errors about the peer before any
  // address has worked.
  std::string all() const;

 private:
  void start_current(Clock::time_point now);

  std::vector<util::SocketAddress> candidates_;
  std::size_t index_ = 0;
  Clock::time_point window_end_;
  Clock::time_point connect_deadline_;
  std::chrono::milliseconds connect_budget_{0};
  std::vector<std::string> failures_;
};

}  // namespace weft::transport
