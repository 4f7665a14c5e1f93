// TcpPath: sending: a frame written at once by the posting thread when its queue is empty, else
// queued for whoever writes next; control frames; MSG_ZEROCOPY's choice and its notices
// (docs/transport.md, "Progress", "Zero-copy sends").

#include <sys/socket.h>

#include <cerrno>
#include <string>
#include <utility>

#include "transport/tcp/streams.h"
#include "transport/tcp/tcp_path.h"
#include "transport/tcp/zerocopy.h"
#include "util/log.h"

namespace weft::transport {

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
    ++bytes_moved_here_;
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
    ++bytes_moved_here_;
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
  ++bytes_moved_here_;
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

}  // namespace weft::transport
