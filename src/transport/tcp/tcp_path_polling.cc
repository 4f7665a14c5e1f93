// TcpPath: the progress a waiting thread makes itself, and the connections it takes out of the
// event loop's epoll set meanwhile (docs/transport.md, "Progress").

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <utility>

#include "transport/tcp/tcp_path.h"

namespace weft::transport {

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
  lingering_.fetch_add(1);  // seq_cst, with the loop's turning to slow ticks (after_batch)
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
    event_loop_.wake();
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

}  // namespace weft::transport
