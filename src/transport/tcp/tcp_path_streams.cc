// TcpPath: several connections per peer pair, and large messages split in pieces across them
// (streams.h, docs/transport.md "Several connections per pair").

#include <sys/epoll.h>

#include <optional>
#include <string>
#include <utility>

#include "transport/tcp/streams.h"
#include "transport/tcp/tcp_path.h"
#include "util/log.h"

namespace weft::transport {

uint32_t TcpPath::streams_ready(int peer, TcpConnection* sender) {
  Peer& state = *peers_[peer];
  if (state.streams_wanted.load(std::memory_order_acquire) == 0) {
    // Decided on a ready connection: its local address tells which link reaches the peer.
    if (sender->state != ConnectionState::kReady) return 1;
    // The peer may have connected to us before we needed its address: the streams do.
    if (auto error = learn_address_of(peer)) {
      util::log_warn(util::Subsys::kTransport, [&] { return error->message(); });
    }
    util::MutexLock lock(mutex_);
    if (state.streams_wanted.load(std::memory_order_relaxed) == 0 && !shutting_down_ &&
        !state.failed.load()) {
      open_streams_locked(peer, sender);
    }
    return 1;  // the streams just opened are not ready yet
  }
  return streams_to(peer);
}

uint32_t TcpPath::streams_to(int peer) const {
  const Peer& state = *peers_[peer];
  uint32_t wanted = state.streams_wanted.load(std::memory_order_acquire);
  uint32_t ready = 1;
  while (ready < wanted) {
    TcpConnection* stream = state.out_streams[ready].load(std::memory_order_acquire);
    if (!stream || stream->state != ConnectionState::kReady) break;
    ++ready;
  }
  return ready;
}

void TcpPath::open_streams_locked(int peer, TcpConnection* sender) {
  Peer& state = *peers_[peer];
  uint32_t wanted = options_.streams;
  std::string why = "WEFT_SOCKET_NSTREAMS=" + std::to_string(wanted);
  // Both ends of the connection we send on: the local one names the link, the remote one the
  // host the peer's connection to us came from. Under send_mutex, which closing it takes.
  std::optional<util::SocketAddress> local, remote;
  {
    util::MutexLock send_lock(sender->send_mutex);
    if (!sender->broken) {
      local = util::SocketAddress{};
      local->length = sizeof local->storage;
      if (getsockname(sender->fd.get(), reinterpret_cast<sockaddr*>(&local->storage),
                      &local->length) != 0) {
        local.reset();
      }
      remote = util::SocketAddress{};
      remote->length = sizeof remote->storage;
      if (getpeername(sender->fd.get(), reinterpret_cast<sockaddr*>(&remote->storage),
                      &remote->length) != 0) {
        remote.reset();
      }
    }
  }
  if (wanted == 0) {
    LinkFacts link;
    if (local) link = link_of(*local);
    wanted = auto_stream_count(link.speed_mbps, link.driver);
    why = "auto: " + (link.interface.empty()
                          ? std::string("interface unknown")
                          : link.interface + " at " +
                                (link.speed_mbps > 0 ? std::to_string(link.speed_mbps) + " Mbit/s"
                                                     : std::string("unknown speed")) +
                                (link.driver.empty() ? "" : ", " + link.driver));
  }
  if (!state.known.load(std::memory_order_relaxed)) {
    wanted = 1;
    why += "; the peer's address is unknown";
  }
  state.streams_wanted.store(wanted, std::memory_order_release);
  if (wanted <= 1) {
    util::log_info(util::Subsys::kTransport, [&] {
      return "rank " + std::to_string(options_.rank) + " sends large messages to rank " +
             std::to_string(peer) + " on 1 connection (" + why + ")";
    });
    return;
  }
  const util::SocketAddress address = stream_address_locked(peer, remote);
  for (uint32_t index = 1; index < wanted; ++index) {
    int connect_errno = 0;
    util::Fd fd;
    try {
      fd = start_connect(address, &connect_errno);
    } catch (const Error& e) {  // out of descriptors: large messages go on fewer streams
      util::log_warn(util::Subsys::kTransport,
                     [&] { return "rank " + std::to_string(options_.rank) + ": " + e.message(); });
      break;
    }
    auto connection = std::make_unique<TcpConnection>(std::move(fd), /*outgoing=*/true, peer,
                                                      address.to_string());
    connection->stream = index;
    connection->connect_errno = connect_errno;
    TcpConnection* raw = connection.get();
    adopt_locked(std::move(connection));
    state.out_streams[index].store(raw, std::memory_order_release);
    set_epoll_events(raw, EPOLLOUT);
  }
  util::log_info(util::Subsys::kTransport, [&] {
    return "rank " + std::to_string(options_.rank) + " sends large messages to rank " +
           std::to_string(peer) + " on " + std::to_string(wanted) + " connections (" + why +
           "), the extra ones to " + address.to_string();
  });
}

util::SocketAddress TcpPath::stream_address_locked(
    int peer, const std::optional<util::SocketAddress>& remote) const {
  const Peer& state = *peers_[peer];
  const int reached = state.reached.load(std::memory_order_acquire);
  if (reached >= 0) return state.candidates[reached];
  // We send on the connection the peer made: its listener is at the published address on the
  // host that connection comes from.
  if (remote) {
    if (int index = candidate_on_host(state, remote->host()); index >= 0) {
      return state.candidates[index];
    }
  }
  return state.candidates.front();
}

int TcpPath::candidate_on_host(const Peer& peer, const std::string& host) {
  for (std::size_t i = 0; i < peer.candidates.size(); ++i) {
    if (peer.candidates[i].host() == host) return static_cast<int>(i);
  }
  return -1;
}

void TcpPath::post_striped(TcpConnection* first, int peer, const RequestPtr& request,
                           FrameHeader header, uint32_t stripes) {
  Peer& state = *peers_[peer];
  auto striped = std::make_shared<StripedSend>(request, stripes);
  const auto* data = static_cast<const uint8_t*>(request->data);
  util::MutexLock order(state.stripe_mutex);
  for (uint32_t index = 0; index < stripes; ++index) {
    const Piece piece = piece_of(request->bytes, stripes, index);
    OutboundFrame frame;
    if (index == 0) {
      header.stripes = stripes;
      encode(header, frame.header);
    } else {
      FrameHeader piece_header;
      piece_header.kind = FrameKind::kStripe;
      piece_header.source = static_cast<uint32_t>(options_.rank);
      piece_header.context = piece.offset;
      piece_header.bytes = piece.bytes;
      encode(piece_header, frame.header);
    }
    frame.payload = data + piece.offset;
    frame.payload_bytes = piece.bytes;
    frame.request = request;
    frame.striped = striped;
    enqueue(index == 0 ? first : state.out_streams[index].load(std::memory_order_acquire),
            std::move(frame));
  }
}

void TcpPath::give_up_stream(TcpConnection* connection, const std::string& why) {
  util::log_warn(util::Subsys::kTransport, [&] {
    return "rank " + std::to_string(options_.rank) + " could not open connection " +
           std::to_string(connection->stream) + " to rank " + std::to_string(connection->peer) +
           " at " + connection->address + " (" + why +
           "): large messages go on the connections that could be made";
  });
  close_connection(connection);
}

bool TcpPath::announce_pieces(TcpConnection* first,
                              const std::shared_ptr<StripedArrival>& message) {
  const FrameHeader& header = first->current_frame();
  Peer& state = *peers_[first->peer];
  TcpConnection* streams[kMaxStripes] = {};
  for (uint32_t index = 1; index < header.stripes; ++index) {
    streams[index] = state.in_streams[index].load(std::memory_order_acquire);
    if (!streams[index]) {
      const std::string what = "sent a message striped across " + std::to_string(header.stripes) +
                               " connections without opening connection " + std::to_string(index);
      // The pieces never announced fail here; the first, bound to `first`, with the rest of
      // what the connection carried.
      auto why = peer_error(first->peer, ErrorCode::kPeerFailure,
                            "rank " + std::to_string(first->peer) + " " + what);
      for (uint32_t piece = 1; piece < header.stripes; ++piece) message->piece_done(events_, why);
      drop_broken_stream(first, what);
      return false;
    }
  }
  for (uint32_t index = 1; index < header.stripes; ++index) {
    TcpConnection* stream = streams[index];
    const Piece piece = piece_of(header.bytes, header.stripes, index);
    bool closed = false;
    bool wake = false;
    {
      util::MutexLock lock(stream->piece_mutex);
      closed = stream->pieces_closed;
      if (!closed) {
        stream->due_pieces.push_back(DuePiece{message, piece.offset, piece.bytes});
        wake = std::exchange(stream->awaiting_piece, false);
      }
    }
    if (closed) {
      message->piece_done(
          events_, peer_error(first->peer, ErrorCode::kPeerFailure,
                              "rank " + std::to_string(first->peer) + " (" + stream->address +
                                  ") closed connection " + std::to_string(index) +
                                  " before a message's piece came"));
    } else if (wake && !stream->piece_announced.exchange(true)) {
      streams_announced_.fetch_add(1);
      event_loop_.wake();
    }
  }
  return true;
}

bool TcpPath::piece_due_or_wait(TcpConnection* stream) {
  util::MutexLock lock(stream->piece_mutex);
  const bool due = !stream->due_pieces.empty();
  stream->awaiting_piece = !due;
  util::MutexLock watch_lock(stream->watch_mutex);
  if (stream->awaits_piece != !due) {
    stream->awaits_piece = !due;
    if (stream->state != ConnectionState::kClosed) rewatch_locked(stream);
  }
  return due;
}

bool TcpPath::waits_for_piece(TcpConnection* stream) {
  util::MutexLock lock(stream->piece_mutex);
  return stream->awaiting_piece;
}

void TcpPath::resume_announced_streams() {
  for (const std::unique_ptr<Peer>& peer : peers_) {
    for (const std::atomic<TcpConnection*>& slot : peer->in_streams) {
      TcpConnection* stream = slot.load(std::memory_order_acquire);
      if (!stream || !stream->piece_announced.exchange(false)) continue;
      streams_announced_.fetch_sub(1);
      util::MutexLock in_lock(stream->in_mutex);
      if (stream->state == ConnectionState::kReady) read_on_loop(stream);
    }
  }
}

void TcpPath::begin_piece(TcpConnection* stream) {
  const FrameHeader& header = stream->current_frame();
  DuePiece due;
  {
    // parse_frames saw it due, and only this reader takes pieces.
    util::MutexLock lock(stream->piece_mutex);
    due = std::move(stream->due_pieces.front());
    stream->due_pieces.pop_front();
  }
  stream->bound_striped = due.message;
  if (header.context != due.offset || header.bytes != due.bytes) {
    drop_broken_stream(stream, "sent a piece of " + std::to_string(header.bytes) +
                                   " bytes at offset " + std::to_string(header.context) +
                                   " on connection " + std::to_string(stream->stream) +
                                   " where its message's header announced " +
                                   std::to_string(due.bytes) + " at " + std::to_string(due.offset));
    return;
  }
  stream->payload_target = due.message->target(due.offset);
}

void TcpPath::fail_due_pieces(TcpConnection* stream, const std::shared_ptr<const Error>& why) {
  util::RingDeque<DuePiece> due;
  {
    util::MutexLock lock(stream->piece_mutex);
    stream->pieces_closed = true;
    std::swap(due, stream->due_pieces);
  }
  for (DuePiece& piece : due) piece.message->piece_done(events_, why);
}

}  // namespace weft::transport
