#include "transport/tcp/tcp_path.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <list>
#include <optional>
#include <utility>

#include "transport/tcp/handshake.h"
#include "transport/tcp/streams.h"
#include "util/futex.h"
#include "util/hmac.h"
#include "util/log.h"

namespace weft::transport {

namespace {

constexpr std::size_t kDirectReadThreshold = 64 * 1024;
// How long the event loop waits, in the middle of a large message, for its next bytes before it
// goes back to epoll_wait (read_rest_of_large_payload).
constexpr std::chrono::microseconds kStreamIdle{50};
constexpr int kLoopTickMs = 200;
// How long a connection a waiter has just read stays unwatched by the loop.
constexpr int kLingerMs = 1;

static_assert(kMaxDataPayload <= BufferPool::kLargestBuffer,
              "a frame the transport accepts must fit the pool's largest buffer");

std::vector<util::SocketAddress> listen_addresses_of(const TcpPathOptions& options) {
  std::vector<util::SocketAddress> addresses{options.listen_address};
  addresses.insert(addresses.end(), options.more_listen_addresses.begin(),
                   options.more_listen_addresses.end());
  return addresses;
}

std::shared_ptr<const Error> make_error(ErrorCode code, const std::string& message) {
  return std::make_shared<const Error>(code, message);
}

}  // namespace

TcpPath::TcpPath(const TcpPathOptions& options, StreamedArrivalEvents& events)
    : options_(options),
      events_(events),
      listeners_(listen_addresses_of(options), options.congestion_control, event_loop_.epoll_fd(),
                 options.rank) {
  for (int i = 0; i < options.world_size; ++i) peers_.push_back(std::make_unique<Peer>());
  event_loop_.start(*this);
}

TcpPath::~TcpPath() { shutdown(std::chrono::steady_clock::now() + std::chrono::seconds(2)); }

std::shared_ptr<const Error> TcpPath::peer_error(int peer, ErrorCode code,
                                                 const std::string& what) const {
  ErrorContext context;
  context.peer = peer;
  context.peer_address = address_of_peer(peer);
  return std::make_shared<const Error>(code, what, context);
}

// ------------------------------------------------------------------------------------------
// Posting
// ------------------------------------------------------------------------------------------

void TcpPath::post_send(const RequestPtr& request) {
  FrameHeader header = data_header(*request, options_.rank);
  Peer& peer = *peers_[request->peer];
  TcpConnection* connection = peer.sender.load(std::memory_order_acquire);
  if (!connection || peer.failed.load()) {
    if (!connection && !peer.failed.load()) {
      if (auto error = learn_address_of(request->peer)) {
        request->fail(error);
        return;
      }
    }
    util::UniqueLock lock(mutex_);
    if (shutting_down_ || peer.failed.load()) {
      auto error = peer.failure ? peer.failure
                                : make_error(ErrorCode::kAborted, "the transport is shutting down");
      lock.unlock();
      request->fail(error);
      return;
    }
    connection = sender_for_locked(request->peer);
  }
  if (request->bytes >= 2 * kSmallestStripe && options_.streams != 1) {
    const uint32_t stripes = stripes_for(request->bytes, streams_ready(request->peer, connection));
    if (stripes > 1) {
      post_striped(connection, request->peer, request, header, stripes);
      return;
    }
  }
  OutboundFrame frame;
  encode(header, frame.header);
  frame.payload = static_cast<const uint8_t*>(request->data);
  frame.payload_bytes = request->bytes;
  frame.request = request;
  enqueue(connection, std::move(frame));
}

bool TcpPath::watch(int peer) {
  if (peer == options_.rank) return false;
  if (!peers_[peer]->sender.load()) {
    if (auto error = learn_address_of(peer)) {
      // A receive still waits: the peer may connect to us.
      util::log_debug(util::Subsys::kTransport, [&] { return error->message(); });
      return false;
    }
  }
  util::MutexLock lock(mutex_);
  if (shutting_down_ || peers_[peer]->failed.load()) return false;
  sender_for_locked(peer);
  return true;
}

// ------------------------------------------------------------------------------------------
// Connections
// ------------------------------------------------------------------------------------------

void TcpPath::adopt_locked(std::unique_ptr<TcpConnection> connection) {
  if (connection->peer >= 0) peers_[connection->peer]->connections.push_back(connection.get());
  connections_.push_back(std::move(connection));
}

void TcpPath::set_epoll_events(TcpConnection* connection, uint32_t events) {
  epoll_event event{};
  event.events = events;
  event.data.ptr = connection;
  connection->watched = events;
  const int operation = connection->in_epoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
  connection->in_epoll = true;
  epoll_ctl(event_loop_.epoll_fd(), operation, connection->fd.get(), &event);
}

void TcpPath::remove_from_epoll(TcpConnection* connection) {
  if (!std::exchange(connection->in_epoll, false)) return;
  connection->watched = 0;
  epoll_ctl(event_loop_.epoll_fd(), EPOLL_CTL_DEL, connection->fd.get(), nullptr);
}

void TcpPath::rewatch_locked(TcpConnection* connection) {
  // A connection its waiter reads is out of the epoll set altogether. Registered, even for its
  // end alone, it would have every segment the peer sends run epoll's callback under the
  // socket's wait-queue lock, in the kernel's receive path; the waiter sees the end itself and
  // hands the connection back (read_ready).
  if (!connection->read_by_loop && !connection->want_write) {
    remove_from_epoll(connection);
    return;
  }
  const bool read = connection->read_by_loop && !connection->holds_parked;
  // A stream awaiting a piece is not watched for its end either: its last bytes wait behind
  // that piece, and the end, level-triggered, would wake the loop on every turn.
  const bool end = connection->read_by_loop && !connection->awaits_piece;
  uint32_t events =
      (end ? EPOLLRDHUP | (read ? EPOLLIN : 0u) : 0u) | (connection->want_write ? EPOLLOUT : 0u);
  if (!connection->in_epoll || events != connection->watched) {
    set_epoll_events(connection, events);
  }
}

// ------------------------------------------------------------------------------------------
// The event loop
// ------------------------------------------------------------------------------------------

int TcpPath::next_wait_ms() {
  loop_fast_this_turn_ = loop_ticks_fast_.load(std::memory_order_relaxed);
  return loop_fast_this_turn_ ? kLingerMs : kLoopTickMs;
}

void TcpPath::on_event(void* tag, uint32_t events) {
  if (listeners_.accept_if_listener(tag, adopt_incoming_)) return;
  on_connection_event(static_cast<TcpConnection*>(tag), events);
}

void TcpPath::after_batch() {
  if (streams_announced_.load() > 0) resume_announced_streams();
  if (loop_fast_this_turn_) {
    auto now = std::chrono::steady_clock::now();
    watch_every_lingering(now - std::chrono::milliseconds(kLingerMs));
    if (parked_count_.load() > 0) resume_parked_connections(now);
    if (held_dials_.load() > 0) release_due_holds(now);
    if (lingering_.load() == 0 && parked_count_.load() == 0 && held_dials_.load() == 0) {
      loop_ticks_fast_.store(false);
      // A wait that just ended, a payload just parked, or a dial just deferred may have counted
      // itself after the check and seen fast ticks (Dekker's pattern, both sides sequentially
      // consistent): look once more.
      if (lingering_.load() > 0 || parked_count_.load() > 0 || held_dials_.load() > 0) {
        loop_ticks_fast_.store(true);
      }
    }
  }
  drop_stale_handshakes();
  // Here, between batches: no event in hand can point at a connection destroyed now.
  destroy_closed_strangers();
  listeners_.resume_when_due();
}

void TcpPath::adopt_incoming(util::Fd fd, const util::SocketAddress& address) {
  util::set_no_delay(fd.get());
  auto connection =
      std::make_unique<TcpConnection>(std::move(fd), /*outgoing=*/false, -1, address.to_string());
  connection->remote_host = address.host();
  connection->state = ConnectionState::kAwaitHello;
  TcpConnection* raw = connection.get();
  {
    util::MutexLock lock(mutex_);
    adopt_locked(std::move(connection));
  }
  set_epoll_events(raw, EPOLLIN | EPOLLRDHUP);
}

void TcpPath::on_connection_event(TcpConnection* connection, uint32_t events) {
  if (connection->state == ConnectionState::kClosed) return;
  if (connection->state == ConnectionState::kConnecting) {
    on_connected(connection);
    return;
  }
  if (events & EPOLLERR) {
    util::MutexLock lock(connection->send_mutex);
    // The kernel's notices of zero-copy sends raise EPOLLERR too. A real error remains: epoll
    // reports it again on the next turn, and a read sees it.
    if (connection->zerocopy_sends > 0 && reap_zerocopy_locked(connection)) events &= ~EPOLLERR;
  }
  if (events & EPOLLOUT) on_writable(connection);
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    util::MutexLock in_lock(connection->in_mutex);
    // The connection is ending: what it still holds is read now, parked or not.
    if (connection->parked && (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
      resume_parked(connection, /*give_up=*/true);
    }
    read_on_loop(connection);
    // A stream that awaits a piece is not read, but a reset one would be reported on every
    // turn: it is lost now.
    if ((events & (EPOLLHUP | EPOLLERR)) && carries_pieces_to_us(*connection) &&
        connection->state == ConnectionState::kReady && waits_for_piece(connection)) {
      on_connection_lost(connection, "the connection was reset");
    }
  }
}

void TcpPath::read_on_loop(TcpConnection* connection) {
  std::string why;
  bool alive;
  try {
    alive = read_available(connection, &why);
    if (alive) alive = read_rest_of_large_payload(connection, &why);
  } catch (const Error& e) {
    why = e.what();
    alive = false;
  }
  if (!alive && connection->state != ConnectionState::kClosed) {
    on_connection_lost(connection, why);
  }
}

bool TcpPath::read_rest_of_large_payload(TcpConnection* connection, std::string* why) {
  // A large message in mid-flight: its sender is writing it now, and the next bytes come as soon
  // as its kernel has copied them, microseconds away. Going back to epoll_wait would cost a
  // wake-up for each socket buffer's worth (the waiter sleeps: it polled for longer than its
  // spin before the message began); waiting here for them keeps the loop on the message until
  // its end, or until the sender falls silent for kStreamIdle. Only that message, and what we
  // have queued for any peer: an exchange sends while it receives, and the peer's bytes may wait
  // on ours (its own loop is here too, reading).
  uint64_t left = connection->payload_left;
  auto last_bytes = std::chrono::steady_clock::now();
  while (connection->state == ConnectionState::kReady && connection->in_payload &&
         connection->payload_target && connection->payload_left >= kDirectReadThreshold &&
         connection->payload_left <= left) {  // more left: the next message began
    left = connection->payload_left;
    const uint64_t before = bytes_moved_here_;
    if (!read_available(connection, why)) return false;
    if (writers_waiting_.load(std::memory_order_relaxed) > 0) write_every_queue();
    auto now = std::chrono::steady_clock::now();
    if (bytes_moved_here_ != before) {
      last_bytes = now;
    } else if (now - last_bytes >= kStreamIdle) {
      break;
    } else {
      util::yield_core();  // the sender may need this very core
    }
  }
  return true;
}

void TcpPath::on_connected(TcpConnection* connection) {
  if (handed_over(connection)) {
    util::MutexLock in_lock(connection->in_mutex);
    retire_handed_over(connection, "the peer's own connection came first");
    return;
  }
  int error = connection->connect_errno;
  if (error == 0) {
    socklen_t length = sizeof error;
    getsockopt(connection->fd.get(), SOL_SOCKET, SO_ERROR, &error, &length);
  }
  if (error == 0) {
    HandshakeTranscript& handshake = connection->handshake;
    handshake.connecting_nonce = util::fresh_nonce();
    handshake.connecting_rank = static_cast<uint32_t>(options_.rank);
    handshake.accepting_rank = static_cast<uint32_t>(connection->peer);
    handshake.world_size = static_cast<uint32_t>(options_.world_size);
    Hello hello{handshake.connecting_rank, handshake.world_size, handshake.connecting_nonce,
                static_cast<uint16_t>(connection->stream)};
    if (send_handshake(connection, encode_hello(hello))) {
      // The handshake's timeout counts from here: connecting has its own.
      connection->accepted_at = std::chrono::steady_clock::now();
      connection->state = ConnectionState::kAwaitChallenge;
      util::MutexLock lock(connection->send_mutex);
      set_epoll_events(connection, EPOLLIN | EPOLLRDHUP);
      return;
    }
    error = errno != 0 ? errno : EPROTO;
  }
  util::MutexLock in_lock(connection->in_mutex);
  std::string outcome = error == ECONNREFUSED ? "refused" : strerror(error);
  if (dial_next_candidate(connection, outcome)) return;
  fail_unreachable_peer(connection, outcome);
}

void TcpPath::on_writable(TcpConnection* connection) {
  util::MutexLock lock(connection->send_mutex);
  if (connection->ready) flush_locked(connection);
}

bool TcpPath::read_available(TcpConnection* connection, std::string* why) {
  for (;;) {
    if (connection->parked && !resume_parked(connection, /*give_up=*/false)) return true;
    if (carries_pieces_to_us(*connection) && connection->state == ConnectionState::kReady) {
      // A piece announced since the reader stopped: its header is staged.
      if (!connection->in_payload) parse_frames(connection);
      if (connection->state != ConnectionState::kReady || waits_for_piece(connection)) return true;
    }
    if (connection->state != ConnectionState::kReady && !in_handshake(connection->state)) {
      return true;  // dropped while resuming
    }
    // A large payload with nothing staged goes straight from the socket into its buffer, to its
    // last byte: a staging read of its tail would take the next frame's payload in too.
    if (connection->state == ConnectionState::kReady && connection->in_payload &&
        connection->staged() == 0 && connection->payload_target &&
        connection->current_frame().bytes >= kDirectReadThreshold) {
      ssize_t n =
          ::recv(connection->fd.get(), connection->payload_target, connection->payload_left, 0);
      if (n > 0) {
        bytes_moved_here_ += static_cast<uint64_t>(n);
        connection->payload_target += n;
        connection->payload_left -= static_cast<uint64_t>(n);
        if (connection->payload_left == 0) finish_frame(connection);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      if (n < 0 && errno == EINTR) continue;
      *why = n == 0 ? "end of stream" : strerror(errno);
      return false;
    }
    connection->compact();
    std::size_t room = connection->staging.size() - connection->staged_end;
    // After a large frame (`current` is the frame last begun) the next is likely large too: its
    // header alone, so that its payload goes straight into its buffer instead of through
    // staging (a copy more of up to 256 KiB).
    if (connection->state == ConnectionState::kReady && !connection->in_payload &&
        connection->current_frame().bytes >= kDirectReadThreshold) {
      room = std::min(room, kFrameHeaderBytes);
    }
    ssize_t n =
        ::recv(connection->fd.get(), connection->staging.data() + connection->staged_end, room, 0);
    if (n == 0) {
      *why = "end of stream";
      return false;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      if (errno == EINTR) continue;
      *why = strerror(errno);
      return false;
    }
    connection->staged_end += static_cast<std::size_t>(n);
    bytes_moved_here_ += static_cast<uint64_t>(n);
    while (in_handshake(connection->state)) {
      if (!parse_handshake(connection)) return connection->state != ConnectionState::kClosed;
    }
    if (connection->state == ConnectionState::kReady) parse_frames(connection);
    if (connection->state == ConnectionState::kClosed) return true;
    // Less than asked for: the socket was empty, and another recv would only say so. What comes
    // next is read on the poller's next turn, or the loop's (its epoll is level-triggered).
    if (static_cast<std::size_t>(n) < room) return true;
    if (connection->state == ConnectionState::kReady &&
        connection->staged_end == connection->staging.size()) {
      connection->grow_staging();
    }
  }
}

// Every caller holds the connection's in_mutex, so no reader is using its buffers.
void TcpPath::close_connection(TcpConnection* connection) {
  {
    util::MutexLock lock(connection->send_mutex);
    // Under watch_mutex: a poller re-watching it must never touch the fd once it is closed (its
    // number may already belong to another socket).
    util::MutexLock watch_lock(connection->watch_mutex);
    connection->state = ConnectionState::kClosed;
    remove_from_epoll(connection);
    connection->ready = false;
    connection->broken = true;
    connection->fd.reset();
    if (std::exchange(connection->held, false)) held_dials_.fetch_sub(1);
  }
  connection->release_inbound_buffers();
  if (is_stranger(*connection)) strangers_closed_.store(true, std::memory_order_relaxed);
}

bool TcpPath::is_stranger(const TcpConnection& connection) {
  // An outgoing connection is its peer's from the start (peers_[].connections, maybe sender).
  return !connection.outgoing && connection.peer < 0;
}

// A connection that never became a rank's is known to nothing but connections_ (its fd left
// epoll when it was closed), so it can go; kept, a stream of strangers would grow the transport
// without bound. Event loop only, between batches of events.
void TcpPath::destroy_closed_strangers() {
  if (!strangers_closed_.exchange(false, std::memory_order_relaxed)) return;
  std::vector<std::unique_ptr<TcpConnection>> doomed;
  {
    util::MutexLock lock(mutex_);
    for (std::unique_ptr<TcpConnection>& connection : connections_) {
      if (is_stranger(*connection) && connection->state == ConnectionState::kClosed) {
        doomed.push_back(std::move(connection));
      }
    }
    std::erase(connections_, nullptr);
  }
}

void TcpPath::drain_siblings(TcpConnection* lost, const std::shared_ptr<const Error>& why) {
  std::vector<TcpConnection*> siblings;
  {
    util::MutexLock lock(mutex_);
    for (TcpConnection* connection : peers_[lost->peer]->connections) {
      if (connection != lost && connection->state == ConnectionState::kReady) {
        siblings.push_back(connection);
      }
    }
  }
  for (TcpConnection* sibling : siblings) {
    // Only the event loop holds two in_mutexes at once, so this cannot deadlock.
    util::MutexLock in_lock(sibling->in_mutex);
    std::string ignored;
    bool alive;
    try {
      if (sibling->parked) resume_parked(sibling, /*give_up=*/true);
      alive = read_available(sibling, &ignored);
    } catch (const Error&) {
      alive = false;
    }
    if (!alive) {
      close_connection(sibling);
      fail_inbound(sibling, why);
    }
  }
}

void TcpPath::on_connection_lost(TcpConnection* connection, const std::string& why) {
  if (connection->outgoing && connection->stream > 0 && in_handshake(connection->state)) {
    give_up_stream(connection, "closed during the handshake (" + why + ")");
    return;
  }
  if (connection->outgoing && in_handshake(connection->state) && handed_over(connection)) {
    retire_handed_over(connection, "closed during the handshake (" + why + ")");
    return;
  }
  if (connection->outgoing && in_handshake(connection->state) &&
      dial_next_candidate(connection, "closed during the handshake (" + why + ")")) {
    return;
  }
  int peer = connection->peer;
  bool graceful = connection->goodbye_received;
  close_connection(connection);
  if (peer < 0) return;  // a stranger or an unfinished handshake
  bool shutting_down;
  {
    util::MutexLock lock(mutex_);
    shutting_down = shutting_down_;
  }
  std::shared_ptr<const Error> error =
      shutting_down ? make_error(ErrorCode::kAborted, "the transport was shut down")
                    : connection_lost_error(*connection, graceful, why);
  // Both ranks may have connected at once: what the peer sent before it left may still sit on
  // its other connection. Deliver that before declaring anything pending lost.
  drain_siblings(connection, error);
  fail_inbound(connection, error);
  if (shutting_down) return;
  if (!graceful) util::log_error(util::Subsys::kTransport, [&] { return error->what(); });
  events_.peer_lost(peer, error, /*died=*/!graceful);
}

std::shared_ptr<const Error> TcpPath::connection_lost_error(const TcpConnection& connection,
                                                            bool graceful,
                                                            const std::string& why) const {
  const int peer = connection.peer;
  std::string who = "rank " + std::to_string(peer) + " (" + connection.address + ")";
  if (graceful) {
    return std::make_shared<const Error>(
        ErrorCode::kPeerFailure, who + " has shut down; operations with it cannot complete",
        peer_error(peer, ErrorCode::kPeerFailure, "")->context(),
        // A rank usually shuts down early because another died: keep that cause.
        events_.first_death());
  }
  return peer_error(
      peer, ErrorCode::kPeerFailure,
      who + " " +
          (why.rfind("refused", 0) == 0 ? why
                                        : "closed its connection unexpectedly (" + why +
                                              "): the process died or was killed"));
}

void TcpPath::drop_stale_handshakes() {
  auto now = std::chrono::steady_clock::now();
  // Once per tick, not per event: this scans every connection.
  if (now - last_handshake_sweep_ < std::chrono::milliseconds(kLoopTickMs)) return;
  last_handshake_sweep_ = now;
  std::vector<TcpConnection*> stale;
  std::vector<TcpConnection*> stale_connects;
  {
    util::MutexLock lock(mutex_);
    stale_connects = stale_connects_locked(now);
    for (auto& connection : connections_) {
      if (in_handshake(connection->state) &&
          now - connection->accepted_at > options_.handshake_timeout) {
        stale.push_back(connection.get());
      }
    }
  }
  for (TcpConnection* connection : stale_connects) {
    util::MutexLock in_lock(connection->in_mutex);
    if (connection->state != ConnectionState::kConnecting) continue;
    std::string outcome;
    if (connection->stream > 0) {
      outcome = "timed out after " + std::to_string(options_.handshake_timeout.count()) + " ms";
    } else {
      util::MutexLock lock(mutex_);
      outcome = "timed out after " +
                std::to_string(peers_[connection->peer]->dial->connect_budget().count()) + " ms";
    }
    if (!dial_next_candidate(connection, outcome)) fail_unreachable_peer(connection, outcome);
  }
  if (stale.empty()) return;  // the loop sweeps often: no text built for nothing
  std::string within = " within " + std::to_string(options_.handshake_timeout.count()) +
                       " ms (WEFT_HANDSHAKE_TIMEOUT)";
  for (TcpConnection* connection : stale) {
    util::MutexLock in_lock(connection->in_mutex);
    if (!in_handshake(connection->state)) continue;
    if (connection->outgoing) {
      fail_outgoing_handshake(connection, ErrorCode::kTimeout,
                              "it did not complete the handshake" + within);
    } else {
      refuse_incoming(connection, "it did not complete the handshake" + within);
    }
  }
}

// ------------------------------------------------------------------------------------------
// Failure, cancellation, shutdown
// ------------------------------------------------------------------------------------------

void TcpPath::drop_peer(int peer, const std::shared_ptr<const Error>& why,
                        std::vector<RequestPtr>& victims) {
  util::MutexLock lock(mutex_);
  Peer& state = *peers_[peer];
  if (state.failed.load()) return;
  state.failure = why;
  state.failed.store(true);
  for (TcpConnection* connection : state.connections) {
    util::MutexLock send_lock(connection->send_mutex);
    connection->broken = true;
    for (OutboundFrame& frame : connection->queue) {
      if (frame.request) victims.push_back(std::move(frame.request));
    }
    connection->queue.clear();
    for (TcpConnection::ZerocopyCall& call : connection->zerocopy_calls) {
      if (call.ticket->request) victims.push_back(std::move(call.ticket->request));
    }
    connection->zerocopy_calls.clear();
  }
}

void TcpPath::announce_death(int peer, const std::string& text) {
  broadcast_control(FrameKind::kPeerFailed, 0, static_cast<uint64_t>(peer), text, peer);
}

void TcpPath::announce_abort(uint64_t context, const std::string& text) {
  broadcast_control(FrameKind::kContextAbort, context, 0, text, -1);
}

bool TcpPath::poll(Request* waited_for) {
  if (!waited_for) return false;
  Request& request = *waited_for;
  if (request.done() || request.peer < 0 || request.peer == options_.rank) return false;
  const uint64_t moved_before = bytes_moved_here_;
  // The waiting thread moves its peer's connections along both ways, and every queue the event
  // loop would otherwise have to wake up for: a send's tail and the receive it waits on are
  // usually in flight together (an exchange, a ring step), and a hop through the loop thread
  // costs a wake-up per message.
  Peer& peer = *peers_[request.peer];
  for (const std::atomic<TcpConnection*>& slot : peer.inbound) {
    TcpConnection* connection = slot.load(std::memory_order_acquire);
    if (!connection) break;
    if (connection->state == ConnectionState::kReady && polled(peer, connection)) {
      read_ready(connection);
    }
  }
  TcpConnection* sender = peer.sender.load(std::memory_order_acquire);
  if (sender && sender->state == ConnectionState::kReady) write_queued(sender);
  write_streams(peer);
  if (writers_waiting_.load(std::memory_order_relaxed) > 0) write_every_queue();
  return bytes_moved_here_ != moved_before;
}

void TcpPath::shutdown(std::chrono::steady_clock::time_point flush_deadline) {
  {
    util::MutexLock lock(mutex_);
    if (shutting_down_) return;
    shutting_down_ = true;
  }
  auto aborted = make_error(ErrorCode::kAborted, "the transport was shut down");

  auto queues_empty = [this] {
    util::MutexLock lock(mutex_);
    for (auto& connection : connections_) {
      util::MutexLock send_lock(connection->send_mutex);
      if (!connection->broken && connection->ready &&
          (!connection->queue.empty() || !connection->zerocopy_calls.empty())) {
        return false;
      }
    }
    return true;
  };
  auto drain = [&](std::chrono::steady_clock::time_point until) {
    while (!queues_empty() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  // A held dial carries what was posted to it, and its goodbye.
  release_due_holds(std::chrono::steady_clock::time_point::max());
  drain(flush_deadline);
  // A connection still in its handshake would close without a goodbye, and its peer would take
  // us for dead: let the handshakes finish first.
  auto handshakes_done = [this] {
    util::MutexLock lock(mutex_);
    for (auto& connection : connections_) {
      ConnectionState state = connection->state.load();
      if (state == ConnectionState::kConnecting || in_handshake(state)) {
        return false;
      }
    }
    return true;
  };
  auto handshake_deadline =
      std::min(flush_deadline, std::chrono::steady_clock::now() + std::chrono::seconds(2));
  while (!handshakes_done() && std::chrono::steady_clock::now() < handshake_deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  std::vector<TcpConnection*> ready;
  {
    util::MutexLock lock(mutex_);
    for (auto& connection : connections_) {
      if (connection->state == ConnectionState::kReady) ready.push_back(connection.get());
    }
  }
  for (TcpConnection* connection : ready) {
    send_control(connection, FrameKind::kGoodbye, 0, 0, "");
  }
  drain(
      std::max(flush_deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(200)));

  event_loop_.stop();

  std::list<RequestPtr> unsent;
  {
    util::MutexLock lock(mutex_);
    for (auto& connection : connections_) {
      util::MutexLock send_lock(connection->send_mutex);
      for (OutboundFrame& frame : connection->queue) {
        if (frame.request) unsent.push_back(std::move(frame.request));
      }
      connection->queue.clear();
      for (TcpConnection::ZerocopyCall& call : connection->zerocopy_calls) {
        if (call.ticket->request) unsent.push_back(std::move(call.ticket->request));
      }
      connection->zerocopy_calls.clear();
      connection->broken = true;
      connection->fd.reset();
      connection->state = ConnectionState::kClosed;
    }
  }
  for (const RequestPtr& request : unsent) request->fail(aborted);
  listeners_.close();
}

}  // namespace weft::transport
