// TcpPath: withdrawing a send from its connection's queue (cancel_send; refused while the kernel
// still reads its buffer) and detaching a receive that a payload is being read into
// (detach_receive), striped messages' pieces included (path.h).

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "transport/tcp/tcp_path.h"

namespace weft::transport {

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

}  // namespace weft::transport
