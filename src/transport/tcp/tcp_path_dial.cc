// TcpPath: where its peers are and how a connection to one is made: the peers' addresses (given
// or looked up), the dial through a peer's candidates, and the peer that none of them reaches
// (docs/transport.md, "Connections").

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "transport/tcp/congestion_control.h"
#include "transport/tcp/tcp_path.h"
#include "util/log.h"

namespace weft::transport {

// ------------------------------------------------------------------------------------------
// Peers' addresses
// ------------------------------------------------------------------------------------------

void TcpPath::set_peer_candidates(std::vector<std::vector<util::SocketAddress>> candidates) {
  util::MutexLock lock(mutex_);
  for (std::size_t peer = 0; peer < candidates.size() && peer < peers_.size(); ++peer) {
    if (candidates[peer].empty()) continue;
    peers_[peer]->candidates = std::move(candidates[peer]);
    peers_[peer]->known.store(true, std::memory_order_release);
  }
}

void TcpPath::set_peer_lookup(PeerLookup lookup) {
  util::MutexLock lock(mutex_);
  peer_lookup_ = std::move(lookup);
}

std::shared_ptr<const Error> TcpPath::learn_address_of(int peer) {
  Peer& state = *peers_[peer];
  if (state.known.load(std::memory_order_acquire)) return nullptr;
  PeerLookup lookup;
  {
    util::MutexLock lock(mutex_);
    lookup = peer_lookup_;
  }
  const std::string whose = "rank " + std::to_string(options_.rank) + " cannot tell where rank " +
                            std::to_string(peer) + " listens";
  if (!lookup) return peer_error(peer, ErrorCode::kInternal, whose + ": it was never given");
  std::vector<util::SocketAddress> candidates;
  try {
    candidates = lookup(peer);
  } catch (const Error& e) {
    return peer_error(peer, e.code(), whose + ": " + e.message());
  }
  if (candidates.empty()) {
    return peer_error(peer, ErrorCode::kInternal, whose + ": it published no address");
  }
  util::MutexLock lock(mutex_);
  if (!state.known.load(std::memory_order_relaxed)) {
    state.candidates = std::move(candidates);
    state.known.store(true, std::memory_order_release);
    // Its own connection may have come first (we look a peer up only when we have none to
    // send on; extra streams look it up later).
    for (const TcpConnection* connection : state.connections) {
      if (!connection->outgoing && connection->stream == 0) note_seen_at_locked(state, *connection);
    }
  }
  return nullptr;
}

void TcpPath::set_peer_addresses(std::vector<util::SocketAddress> addresses) {
  std::vector<std::vector<util::SocketAddress>> candidates;
  for (util::SocketAddress& address : addresses) candidates.push_back({std::move(address)});
  set_peer_candidates(std::move(candidates));
}

std::string TcpPath::peer_address(int peer) const {
  util::MutexLock lock(mutex_);
  return address_of_peer(peer);
}

// A peer's candidates are set once, before `known`, and `reached` is atomic: no lock needed.
std::string TcpPath::address_of_peer(int peer) const {
  if (peer < 0 || peer >= static_cast<int>(peers_.size())) return "";
  if (!peers_[peer]->known.load(std::memory_order_acquire)) {
    // Never looked up: a peer that dialled us first needs no address. Its host still says where
    // it runs; the port of its connection would only mislead (it is not where it listens).
    const TcpConnection* sender = peers_[peer]->sender.load(std::memory_order_acquire);
    return sender && !sender->outgoing ? sender->remote_host : "";
  }
  const std::vector<util::SocketAddress>& candidates = peers_[peer]->candidates;
  int reached = peers_[peer]->reached.load(std::memory_order_acquire);
  if (reached >= 0) return candidates[reached].to_string();
  int seen_at = peers_[peer]->seen_at.load(std::memory_order_acquire);
  if (seen_at >= 0) return candidates[seen_at].to_string();
  std::string text;
  for (const util::SocketAddress& address : candidates) {
    text += (text.empty() ? "" : " or ") + address.to_string();
  }
  return text;
}

// ------------------------------------------------------------------------------------------
// Dialing
// ------------------------------------------------------------------------------------------

TcpConnection* TcpPath::sender_for_locked(int peer) {
  Peer& state = *peers_[peer];
  if (TcpConnection* existing = state.sender.load()) return existing;
  TcpConnection* chosen = nullptr;
  for (TcpConnection* connection : state.connections) {
    if (connection->stream == 0 && connection->state != ConnectionState::kClosed) {
      chosen = connection;
      break;
    }
  }
  if (!chosen) {
    chosen =
        connect_locked(peer,
                       /*deferred=*/peer_proving_locked(peer, std::chrono::steady_clock::now()));
  }
  state.sender.store(chosen, std::memory_order_release);
  return chosen;
}

TcpConnection* TcpPath::connect_locked(int peer, bool deferred) {
  Peer& state = *peers_[peer];
  if (!state.known.load(std::memory_order_relaxed) || state.candidates.empty()) {
    throw Error(ErrorCode::kInternal, "no address known for rank " + std::to_string(peer));
  }
  // Named by the first address it will try (start_dial_locked begins the tour there).
  auto connection = std::make_unique<TcpConnection>(util::Fd(), /*outgoing=*/true, peer,
                                                    state.candidates.front().to_string());
  TcpConnection* raw = connection.get();
  if (!deferred) {
    start_dial_locked(raw);
    adopt_locked(std::move(connection));
    return raw;
  }
  raw->state = ConnectionState::kDeferred;
  {
    util::MutexLock send_lock(raw->send_mutex);
    raw->held = true;
  }
  adopt_locked(std::move(connection));
  held_dials_.fetch_add(1);
  tick_loop_fast();  // it counts the wait
  util::log_debug(util::Subsys::kTransport, [&] {
    return "rank " + std::to_string(options_.rank) + " waits for rank " + std::to_string(peer) +
           "'s connection to it to prove itself before dialling it";
  });
  return raw;
}

void TcpPath::start_dial_locked(TcpConnection* connection) {
  Peer& state = *peers_[connection->peer];
  state.dial.emplace(state.candidates, options_.handshake_timeout,
                     std::chrono::steady_clock::now());
  int connect_errno = 0;
  connection->fd = start_connect(state.dial->current(), &connect_errno);
  connection->connect_errno = connect_errno;
  connection->accepted_at = std::chrono::steady_clock::now();
  connection->state = ConnectionState::kConnecting;
  util::log_debug(util::Subsys::kTransport, [&] {
    return "rank " + std::to_string(options_.rank) + " connecting to rank " +
           std::to_string(connection->peer) + " at " + connection->address;
  });
  set_epoll_events(connection, EPOLLOUT);
}

util::Fd TcpPath::start_connect(const util::SocketAddress& address, int* connect_errno) const {
  // Before connect: a connection's congestion control starts when it is established, and a
  // BBR started then would leave pacing on after the change.
  return util::connect_started(address, connect_errno, [this](int fd) {
    use_congestion_control(fd, options_.congestion_control);
  });
}

bool TcpPath::dial_next_candidate(TcpConnection* connection, const std::string& outcome) {
  if (!connection->outgoing || connection->stream > 0 || handed_over(connection)) return false;
  const auto now = std::chrono::steady_clock::now();
  util::SocketAddress next;
  {
    util::MutexLock lock(mutex_);
    Peer& peer = *peers_[connection->peer];
    if (!peer.dial || shutting_down_ || peer.failed.load()) return false;
    if (!peer.dial->advance(outcome, now)) return false;
    next = peer.dial->current();
  }
  int connect_errno = 0;
  util::Fd fd;
  try {
    fd = start_connect(next, &connect_errno);
  } catch (const Error&) {  // out of descriptors: no address can be tried now
    return false;
  }
  util::log_debug(util::Subsys::kTransport, [&] {
    return "rank " + std::to_string(options_.rank) + " connecting to rank " +
           std::to_string(connection->peer) + " at " + next.to_string() + " (" +
           connection->address + ": " + outcome + ")";
  });
  {
    // The same connection object keeps the frames queued for the peer and stays its sender;
    // only its socket and handshake start over.
    util::MutexLock send_lock(connection->send_mutex);
    util::MutexLock watch_lock(connection->watch_mutex);
    remove_from_epoll(connection);
    connection->fd = std::move(fd);
    connection->address = next.to_string();
    connection->connect_errno = connect_errno;
    connection->handshake = HandshakeTranscript{};
    connection->staged_begin = connection->staged_end = 0;
    connection->accepted_at = now;
    connection->state = ConnectionState::kConnecting;
    set_epoll_events(connection, EPOLLOUT);
  }
  return true;
}

void TcpPath::fail_unreachable_peer(TcpConnection* connection, const std::string& outcome) {
  if (connection->stream > 0) {
    give_up_stream(connection, outcome);
    return;
  }
  if (handed_over(connection)) {
    retire_handed_over(connection, outcome);
    return;
  }
  const int peer = connection->peer;
  std::string failures;
  std::size_t tried = 1;
  {
    util::MutexLock lock(mutex_);
    if (const std::optional<CandidateDial>& dial = peers_[peer]->dial) {
      failures = dial->failures();
      tried = dial->size();
    }
  }
  close_connection(connection);
  bool shutting_down;
  {
    util::MutexLock lock(mutex_);
    shutting_down = shutting_down_;
  }
  std::string what;
  if (tried == 1) {
    what = "rank " + std::to_string(peer) + " (" + connection->address + ") " +
           (outcome == "refused" ? "refused the connection: nothing listens there (the process is "
                                   "gone)"
                                 : "could not be connected to: " + outcome);
  } else {
    what = "rank " + std::to_string(peer) + " could not be reached at any of its addresses (" +
           failures + "): the process is gone, or no network joins this host to it";
  }
  std::shared_ptr<const Error> error =
      shutting_down
          ? std::make_shared<const Error>(ErrorCode::kAborted, "the transport was shut down")
          : peer_error(peer, ErrorCode::kPeerFailure, what);
  // The peer may have connected to us meanwhile and sent something before it left.
  drain_siblings(connection, error);
  if (shutting_down) return;
  util::log_error(util::Subsys::kTransport, [&] { return error->what(); });
  events_.peer_lost(peer, error, /*died=*/true);
}

void TcpPath::note_reached(TcpConnection* connection) {
  if (connection->stream > 0) return;  // it went where the first one had reached
  const int peer = connection->peer;
  std::string failures;
  {
    util::MutexLock lock(mutex_);
    Peer& state = *peers_[peer];
    if (!state.dial) return;
    const std::vector<util::SocketAddress>& candidates = state.candidates;
    auto found = std::find(candidates.begin(), candidates.end(), state.dial->current());
    state.reached.store(static_cast<int>(found - candidates.begin()), std::memory_order_release);
    failures = state.dial->failures();
  }
  util::log_info(util::Subsys::kTransport, [&] {
    return "rank " + std::to_string(options_.rank) + " reaches rank " + std::to_string(peer) +
           " at " + connection->address + (failures.empty() ? "" : " (tried " + failures + ")");
  });
}

std::vector<TcpConnection*> TcpPath::stale_connects_locked(
    std::chrono::steady_clock::time_point now) {
  std::vector<TcpConnection*> stale;
  for (auto& connection : connections_) {
    if (!connection->outgoing || connection->state != ConnectionState::kConnecting) continue;
    if (connection->stream > 0) {
      if (now - connection->accepted_at > options_.handshake_timeout) {
        stale.push_back(connection.get());
      }
      continue;
    }
    const std::optional<CandidateDial>& dial = peers_[connection->peer]->dial;
    if (dial && now >= dial->connect_deadline()) stale.push_back(connection.get());
  }
  return stale;
}

}  // namespace weft::transport
