#include "transport/tcp/tcp_path.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <list>
#include <optional>
#include <utility>

#include "transport/tcp/congestion_control.h"
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

// Bytes this thread read or wrote, in any unit that grows: poll() says whether it moved any.
thread_local uint64_t bytes_moved_here = 0;

static_assert(kMaxDataPayload <= BufferPool::kLargestBuffer,
              "a frame the transport accepts must fit the pool's largest buffer");

// epoll's data.ptr: the wake-up's sentinel; listeners and connections use their own address.
char kWakeTag;

std::shared_ptr<const Error> make_error(ErrorCode code, const std::string& message) {
  return std::make_shared<const Error>(code, message);
}

}  // namespace

TcpPath::TcpPath(const TcpPathOptions& options, StreamedArrivalEvents& events)
    : options_(options),
      events_(events),
      epoll_fd_(epoll_create1(EPOLL_CLOEXEC)),
      acceptor_(epoll_fd_.get(), util::Subsys::kTransport, "rank " + std::to_string(options.rank)) {
  wake_fd_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!epoll_fd_.valid() || !wake_fd_.valid()) util::throw_system_error("epoll/eventfd", errno);
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.ptr = &kWakeTag;
  if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, wake_fd_.get(), &wake) != 0) {
    util::throw_system_error("epoll_ctl", errno);
  }
  listeners_.reserve(1 + options.more_listen_addresses.size());
  auto add_listener = [this](const util::SocketAddress& address) {
    Listener listener;
    listener.fd = util::listen_on(address, /*non_blocking=*/true);
    // Set on the listener, not on what it accepts: a connection starts with its listener's, and
    // one that started paced (BBR) stays paced when changed once established.
    use_congestion_control(listener.fd.get(), options_.congestion_control);
    listener.address = util::local_address_of(listener.fd.get());
    listeners_.push_back(std::move(listener));
    acceptor_.add(listeners_.back().fd.get(), epoll_data_t{.ptr = &listeners_.back()});
  };
  add_listener(options.listen_address);
  for (const util::SocketAddress& address : options.more_listen_addresses) add_listener(address);
  for (int i = 0; i < options.world_size; ++i) peers_.push_back(std::make_unique<Peer>());
  loop_ = std::thread([this] { run_loop(); });
}

TcpPath::~TcpPath() { shutdown(std::chrono::steady_clock::now() + std::chrono::seconds(2)); }

std::vector<util::SocketAddress> TcpPath::listen_addresses() const {
  std::vector<util::SocketAddress> addresses;
  for (const Listener& listener : listeners_) addresses.push_back(listener.address);
  return addresses;
}

const TcpPath::Listener* TcpPath::listener_of(const void* tag) const {
  for (const Listener& listener : listeners_) {
    if (tag == &listener) return &listener;
  }
  return nullptr;
}

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
      shutting_down ? make_error(ErrorCode::kAborted, "the transport was shut down")
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
  epoll_ctl(epoll_fd_.get(), operation, connection->fd.get(), &event);
}

void TcpPath::remove_from_epoll(TcpConnection* connection) {
  if (!std::exchange(connection->in_epoll, false)) return;
  connection->watched = 0;
  epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, connection->fd.get(), nullptr);
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
// Sending
// ------------------------------------------------------------------------------------------

void TcpPath::enqueue(TcpConnection* connection, OutboundFrame&& frame) {
  util::UniqueLock lock(connection->send_mutex);
  if (TcpConnection* successor = connection->handed_over_to; successor && frame.request) {
    // Posted by a thread that read the peer's sender just before the hand-over. Control frames
    // stay: a goodbye, above all, belongs on the connection it ends.
    lock.unlock();
    enqueue(successor, std::move(frame));
    return;
  }
  if (connection->broken) {
    Peer& peer = *peers_[connection->peer];
    if (!peer.failed.load()) {
      // The failure is being handled right now (the connection was closed a moment ago): it
      // will fail this frame's request with its real cause when it collects the queue.
      connection->queue.push_back(std::move(frame));
      return;
    }
    lock.unlock();
    std::shared_ptr<const Error> error;
    {
      util::MutexLock state_lock(mutex_);
      error = peer.failure;
    }
    if (frame.request) frame.request->fail(error);
    return;
  }
  if (frame.request) connection->carried_data = true;
  if (connection->ready && connection->queue.empty() && connection->write_alone_locked(frame)) {
    ++bytes_moved_here;
    return;
  }
  connection->queue.push_back(std::move(frame));
  if (!connection->ready || connection->queue.size() > 1) return;  // being written already
  flush_locked(connection);
}

void TcpPath::flush_locked(TcpConnection* connection) {
  const std::size_t frames_before = connection->queue.size();
  const std::size_t sent_before = frames_before ? connection->queue.front().sent : 0;
  int error = 0;
  const bool written = connection->flush_locked(&error);
  if (connection->queue.size() != frames_before ||
      (frames_before && connection->queue.front().sent != sent_before)) {
    ++bytes_moved_here;
  }
  if (!written) {
    // The read side sees the same socket error and fails the peer with a clear message.
    connection->broken = true;
    util::MutexLock lock(connection->watch_mutex);
    if (std::exchange(connection->want_write, false)) {
      writers_waiting_.fetch_sub(1, std::memory_order_relaxed);
    }
    return;
  }
  // EPOLLOUT is watched only while something is queued: a writable socket would wake the loop
  // on every turn.
  const bool queued = !connection->queue.empty();
  if (queued == connection->want_write_for_sender()) return;
  util::MutexLock lock(connection->watch_mutex);
  connection->want_write = queued;
  writers_waiting_.fetch_add(queued ? 1 : -1, std::memory_order_relaxed);
  rewatch_locked(connection);
}

OutboundFrame TcpPath::control_frame(FrameKind kind, uint64_t context, uint64_t tag,
                                     const std::string& text) const {
  FrameHeader header;
  header.kind = kind;
  header.source = static_cast<uint32_t>(options_.rank);
  header.context = context;
  header.tag = tag;
  OutboundFrame frame;
  frame.owned.assign(text.begin(), text.end());
  if (frame.owned.size() > kMaxControlPayload) frame.owned.resize(kMaxControlPayload);
  header.bytes = frame.owned.size();
  encode(header, frame.header);
  frame.payload = frame.owned.data();
  frame.payload_bytes = frame.owned.size();
  return frame;
}

void TcpPath::send_control(TcpConnection* connection, FrameKind kind, uint64_t context,
                           uint64_t tag, const std::string& text) {
  enqueue(connection, control_frame(kind, context, tag, text));
}

void TcpPath::broadcast_control(FrameKind kind, uint64_t context, uint64_t tag,
                                const std::string& text, int except_peer) {
  std::vector<TcpConnection*> targets;
  {
    util::MutexLock lock(mutex_);
    for (int peer = 0; peer < options_.world_size; ++peer) {
      if (peer == except_peer || peer == options_.rank || peers_[peer]->failed.load()) continue;
      // Every connection, not one: the peer reads them independently, and the news must be
      // ahead of anything we send later (a goodbye) on whichever it reads first. Connections
      // still in their handshake queue it until they are ready.
      for (TcpConnection* connection : peers_[peer]->connections) {
        if (connection->state != ConnectionState::kClosed) targets.push_back(connection);
      }
    }
  }
  for (TcpConnection* connection : targets) {
    util::log_debug(util::Subsys::kTransport, [&] {
      return "rank " + std::to_string(options_.rank) + " tells rank " +
             std::to_string(connection->peer) + " (" + peer_address(connection->peer) +
             "): " + text;
    });
    send_control(connection, kind, context, tag, text);
  }
}

// ------------------------------------------------------------------------------------------
// The event loop
// ------------------------------------------------------------------------------------------

void TcpPath::run_loop() {
  epoll_event events[64];
  while (!stop_.load()) {
    const bool fast = loop_ticks_fast_.load(std::memory_order_relaxed);
    int count = epoll_wait(epoll_fd_.get(), events, 64, fast ? kLingerMs : kLoopTickMs);
    if (count < 0 && errno != EINTR) {
      util::log_error(util::Subsys::kTransport, [&, saved_errno = errno] {
        return "transport event loop: epoll_wait: " + std::string(strerror(saved_errno));
      });
      return;
    }
    for (int i = 0; i < count; ++i) {
      void* tag = events[i].data.ptr;
      if (const Listener* listener = listener_of(tag)) {
        acceptor_.accept_all(listener->fd.get(),
                             [this](util::Fd fd, const util::SocketAddress& from) {
                               adopt_incoming(std::move(fd), from);
                             });
      } else if (tag == &kWakeTag) {
        uint64_t drained;
        ssize_t ignored = ::read(wake_fd_.get(), &drained, sizeof drained);
        (void)ignored;
      } else {
        on_event(static_cast<TcpConnection*>(tag), events[i].events);
      }
    }
    if (streams_announced_.load() > 0) resume_announced_streams();
    if (fast) {
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
    acceptor_.resume_when_due();
  }
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

void TcpPath::on_event(TcpConnection* connection, uint32_t events) {
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
    const uint64_t before = bytes_moved_here;
    if (!read_available(connection, why)) return false;
    if (writers_waiting_.load(std::memory_order_relaxed) > 0) write_every_queue();
    auto now = std::chrono::steady_clock::now();
    if (bytes_moved_here != before) {
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
        bytes_moved_here += static_cast<uint64_t>(n);
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
    bytes_moved_here += static_cast<uint64_t>(n);
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

void TcpPath::choose_zerocopy_locked(TcpConnection* connection) {
  if (options_.zerocopy == ZerocopyMode::kOff || carries_pieces_to_us(*connection)) return;
  int speed_mbps = -1;
  if (options_.zerocopy == ZerocopyMode::kAuto) {
    util::SocketAddress local;
    local.length = sizeof local.storage;
    if (getsockname(connection->fd.get(), reinterpret_cast<sockaddr*>(&local.storage),
                    &local.length) != 0) {
      return;
    }
    speed_mbps = link_of(local).speed_mbps;
  }
  if (!zerocopy_wanted(options_.zerocopy, speed_mbps)) return;
  if (!enable_zerocopy(connection->fd.get())) {
    util::log_debug(util::Subsys::kTransport, [&] {
      return std::string("SO_ZEROCOPY refused: ") + strerror(errno) + "; payloads are copied";
    });
    return;
  }
  connection->zerocopy = true;
  connection->zerocopy_when_copied = options_.zerocopy_when_copied;
  util::log_debug(util::Subsys::kTransport, [&] {
    return "rank " + std::to_string(options_.rank) + " sends payloads from " +
           std::to_string(kZerocopyMinBytes) + " bytes zero-copy to rank " +
           std::to_string(connection->peer) + " (" + connection->address + ")";
  });
}

bool TcpPath::reap_zerocopy_locked(TcpConnection* connection) {
  const bool asked = connection->zerocopy;
  if (!connection->reap_zerocopy_locked()) return false;
  ++bytes_moved_here;
  if (asked && !connection->zerocopy) {
    util::log_info(util::Subsys::kTransport, [&] {
      return "rank " + std::to_string(options_.rank) + " stops sending zero-copy to rank " +
             std::to_string(connection->peer) + " (" + connection->address +
             "): the kernel copies on this link";
    });
  }
  return true;
}

uint64_t TcpPath::zerocopy_sends() const {
  uint64_t sends = 0;
  util::MutexLock lock(mutex_);
  for (const auto& connection : connections_) {
    util::MutexLock send_lock(connection->send_mutex);
    sends += connection->zerocopy_sends;
  }
  return sends;
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

bool TcpPath::cancel_send(Request& request, const std::shared_ptr<const Error>& reason) {
  Peer& peer = *peers_[request.peer];
  TcpConnection* connection = peer.sender.load();
  if (!connection) return false;
  if (peer.streams_wanted.load(std::memory_order_acquire) > 1) {
    if (std::optional<bool> withdrawn = cancel_striped(request, reason)) return *withdrawn;
  }
  {
    // The sender read may have handed over since.
    util::MutexLock lock(connection->send_mutex);
    if (connection->handed_over_to) connection = connection->handed_over_to;
  }
  util::MutexLock lock(connection->send_mutex);
  const bool lent = connection->lends_buffer_locked(request);
  for (auto it = connection->queue.begin(); it != connection->queue.end(); ++it) {
    if (it->request.get() != &request) continue;
    if (lent) {
      // The kernel may still read the caller's buffer (zero-copy): too late to withdraw. The
      // rest goes out from our own copy, so that nothing new is read from it.
      it->owned.assign(it->payload, it->payload + it->payload_bytes);
      it->payload = it->owned.data();
      return false;
    }
    if (it->sent == 0) {
      connection->queue.erase(it);
    } else {
      // Half on the wire: the rest must still go out, from our own copy.
      it->owned.assign(it->payload, it->payload + it->payload_bytes);
      it->payload = it->owned.data();
      it->request.reset();
    }
    request.fail(reason);
    return true;
  }
  return false;
}

std::optional<bool> TcpPath::cancel_striped(Request& request,
                                            const std::shared_ptr<const Error>& reason) {
  Peer& peer = *peers_[request.peer];
  // Whatever is written of it, its receiver counts on every piece: the pieces still queued go
  // out from our own copies, and the send fails now.
  util::MutexLock order(peer.stripe_mutex);
  std::vector<TcpConnection*> connections{peer.sender.load()};
  for (uint32_t index = 1; index < kMaxStripes; ++index) {
    if (TcpConnection* stream = peer.out_streams[index].load()) connections.push_back(stream);
  }
  // First every queued piece takes its own copy, so that no new zero-copy send of it begins.
  bool found = false;
  bool lent = false;
  for (TcpConnection* connection : connections) {
    util::MutexLock lock(connection->send_mutex);
    lent = lent || connection->lends_buffer_locked(request);
    for (OutboundFrame& frame : connection->queue) {
      if (frame.request.get() != &request || !frame.striped) continue;
      frame.owned.assign(frame.payload, frame.payload + frame.payload_bytes);
      frame.payload = frame.owned.data();
      found = true;
    }
  }
  // The kernel may still read the caller's buffer (zero-copy): too late to withdraw.
  if (lent) return false;
  if (!found) return std::nullopt;
  for (TcpConnection* connection : connections) {
    util::MutexLock lock(connection->send_mutex);
    for (OutboundFrame& frame : connection->queue) {
      if (frame.request.get() != &request || !frame.striped) continue;
      frame.request.reset();
      frame.striped.reset();
    }
  }
  // Its last pieces may have gone out between the two passes, completing it: then it is sent,
  // not withdrawn.
  request.fail(reason);
  return request.failed();
}

bool TcpPath::detach_receive(Request& request, const std::shared_ptr<const Error>& reason) {
  std::vector<TcpConnection*> candidates;
  {
    util::MutexLock lock(mutex_);
    for (auto& connection : connections_) {
      // Only a rank's connection can carry a receive, and only those outlive this lock (the
      // event loop destroys strangers'); peer is written under this lock.
      if (connection->peer < 0) continue;
      if (request.peer == kAnyPeer || connection->peer == request.peer) {
        candidates.push_back(connection.get());
      }
    }
  }
  for (TcpConnection* connection : candidates) {
    util::MutexLock in_lock(connection->in_mutex);
    if (connection->bound_receive.get() != &request) continue;
    connection->bound_receive.reset();
    connection->payload_target = nullptr;  // the rest of the payload is dropped
    request.fail(reason);
    return true;
  }
  return detach_striped(request, reason, candidates);
}

bool TcpPath::detach_striped(Request& request, const std::shared_ptr<const Error>& reason,
                             const std::vector<TcpConnection*>& candidates) {
  // Its pieces may be coming on several connections at once: once detached, a piece begun
  // later is dropped (StripedArrival::target); a piece being read now is cut off here, under
  // its connection's input lock.
  std::shared_ptr<StripedArrival> message;
  for (TcpConnection* connection : candidates) {
    util::MutexLock in_lock(connection->in_mutex);
    if (connection->bound_striped && connection->bound_striped->is_for(request)) {
      message = connection->bound_striped;
      break;
    }
    util::MutexLock lock(connection->piece_mutex);
    for (const DuePiece& piece : connection->due_pieces) {
      if (piece.message->is_for(request)) message = piece.message;
    }
    if (message) break;
  }
  if (!message || !message->detach()) return false;
  for (TcpConnection* connection : candidates) {
    util::MutexLock in_lock(connection->in_mutex);
    if (connection->bound_striped == message) connection->payload_target = nullptr;
  }
  request.fail(reason);  // only now: no connection writes into its buffer any more
  return true;
}

bool TcpPath::poll(Request* waited_for) {
  if (!waited_for) return false;
  Request& request = *waited_for;
  if (request.done() || request.peer < 0 || request.peer == options_.rank) return false;
  const uint64_t moved_before = bytes_moved_here;
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
  return bytes_moved_here != moved_before;
}

void TcpPath::start_polling(const Request* waited_for) {
  if (!waited_for) return;
  const Request& request = *waited_for;
  if (request.peer == options_.rank) return;
  if (request.peer < 0) {
    // A receive from anyone is read by the loop: no connection may be left unwatched.
    watch_every_lingering(std::chrono::steady_clock::time_point::max());
    return;
  }
  Peer& peer = *peers_[request.peer];
  util::MutexLock lock(peer.poll_mutex);
  if (peer.pollers++ > 0) return;
  if (std::exchange(peer.lingering, false)) lingering_.fetch_sub(1, std::memory_order_relaxed);
  unwatch_inbound_locked(peer);
}

void TcpPath::stop_polling(const Request* waited_for) {
  if (!waited_for) return;
  const Request& request = *waited_for;
  if (request.peer < 0 || request.peer == options_.rank) return;
  Peer& peer = *peers_[request.peer];
  util::MutexLock lock(peer.poll_mutex);
  if (--peer.pollers > 0) return;
  if (!request.done()) {
    watch_inbound_locked(peer);  // the waiter goes to sleep: the loop must read for it
    return;
  }
  // The next wait usually follows at once, and the peer's next message often comes before it:
  // the connections stay unwatched a little longer (the loop watches them again after
  // kLingerMs unless a wait took them up).
  peer.lingering = true;
  peer.polled_until = std::chrono::steady_clock::now();
  lingering_.fetch_add(1);  // seq_cst, with the loop's turning to slow ticks (run_loop)
  tick_loop_fast();
}

void TcpPath::unwatch_inbound_locked(Peer& peer) {
  for (const std::atomic<TcpConnection*>& slot : peer.inbound) {
    TcpConnection* connection = slot.load(std::memory_order_acquire);
    if (!connection) break;
    util::MutexLock watch_lock(connection->watch_mutex);
    if (!polled(peer, connection)) {
      // The loop reads it, even if a poller took it before the peer's messages showed which
      // connection they come on (it may carry a control frame).
      if (!connection->read_by_loop && connection->state != ConnectionState::kClosed) {
        connection->read_by_loop = true;
        rewatch_locked(connection);
      }
      continue;
    }
    // The poller reads this connection itself; the loop, woken for the same bytes, would only
    // take the core from it.
    if (connection->state != ConnectionState::kReady || !connection->read_by_loop) continue;
    connection->read_by_loop = false;
    rewatch_locked(connection);
  }
}

void TcpPath::note_carrier(TcpConnection* connection) {
  std::atomic<TcpConnection*>& carrier = peers_[connection->peer]->carrier;
  if (carrier.load(std::memory_order_relaxed)) return;
  TcpConnection* none = nullptr;
  carrier.compare_exchange_strong(none, connection, std::memory_order_release);
}

bool TcpPath::polled(const Peer& peer, const TcpConnection* connection) {
  const TcpConnection* carrier = peer.carrier.load(std::memory_order_acquire);
  return !carrier || carrier == connection;
}

void TcpPath::watch_inbound_locked(Peer& peer) {
  for (const std::atomic<TcpConnection*>& slot : peer.inbound) {
    TcpConnection* connection = slot.load(std::memory_order_acquire);
    if (!connection) break;
    // Level-triggered: bytes that came after the poller's last read wake the loop at once.
    util::MutexLock watch_lock(connection->watch_mutex);
    if (connection->read_by_loop) continue;
    connection->read_by_loop = true;
    if (connection->state != ConnectionState::kClosed) rewatch_locked(connection);
  }
}

void TcpPath::watch_every_lingering(std::chrono::steady_clock::time_point idle_before) {
  if (lingering_.load(std::memory_order_relaxed) == 0) return;
  for (const std::unique_ptr<Peer>& peer : peers_) {
    util::MutexLock lock(peer->poll_mutex);
    if (!peer->lingering || peer->polled_until > idle_before) continue;
    peer->lingering = false;
    lingering_.fetch_sub(1, std::memory_order_relaxed);
    watch_inbound_locked(*peer);
  }
}

void TcpPath::tick_loop_fast() {
  // The loop sleeps up to kLoopTickMs when nothing lingers or is parked; it must come back
  // within kLingerMs.
  if (!loop_ticks_fast_.load() && !loop_ticks_fast_.exchange(true)) {
    uint64_t one = 1;
    ssize_t ignored = ::write(wake_fd_.get(), &one, sizeof one);
    (void)ignored;
  }
}

void TcpPath::read_ready(TcpConnection* connection) {
  bool ended = false;
  {
    if (!connection->in_mutex.try_lock()) return;
    util::MutexLock in_lock(connection->in_mutex, std::adopt_lock);
    if (connection->state != ConnectionState::kReady) return;
    std::string ignored;
    try {
      ended = !read_available(connection, &ignored);
    } catch (const Error&) {
      ended = true;
    }
  }
  // A connection that ended is left to the event loop, the only thread that handles a lost
  // connection: it sees the same end once the connection is back in its epoll set.
  if (ended) {
    util::MutexLock watch_lock(connection->watch_mutex);
    if (connection->state == ConnectionState::kClosed || connection->read_by_loop) return;
    connection->read_by_loop = true;
    rewatch_locked(connection);
  }
}

void TcpPath::write_queued(TcpConnection* connection) {
  if (!connection->send_mutex.try_lock()) return;
  util::MutexLock lock(connection->send_mutex, std::adopt_lock);
  if (!connection->ready || connection->broken) return;
  if (!connection->queue.empty()) flush_locked(connection);
  if (!connection->zerocopy_calls.empty()) reap_zerocopy_locked(connection);
}

void TcpPath::write_streams(Peer& peer) {
  const uint32_t streams = peer.streams_wanted.load(std::memory_order_relaxed);
  for (uint32_t index = 1; index < streams; ++index) {
    TcpConnection* stream = peer.out_streams[index].load(std::memory_order_acquire);
    if (stream && stream->state == ConnectionState::kReady) write_queued(stream);
  }
}

void TcpPath::write_every_queue() {
  for (const std::unique_ptr<Peer>& peer : peers_) {
    TcpConnection* connection = peer->sender.load(std::memory_order_acquire);
    if (connection && connection->state == ConnectionState::kReady) write_queued(connection);
    write_streams(*peer);
  }
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

  stop_.store(true);
  uint64_t one = 1;
  ssize_t ignored = ::write(wake_fd_.get(), &one, sizeof one);
  (void)ignored;
  if (loop_.joinable()) loop_.join();

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
  for (Listener& listener : listeners_) listener.fd.reset();
}

}  // namespace weft::transport
