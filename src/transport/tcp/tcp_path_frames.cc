// TcpPath: the frames a ready connection carries, read, checked, matched or parked.

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "transport/tcp/streams.h"
#include "transport/tcp/tcp_path.h"
#include "util/log.h"

namespace weft::transport {

void TcpPath::parse_frames(TcpConnection* connection) {
  while (connection->state == ConnectionState::kReady) {
    if (!connection->in_payload) {
      if (connection->staged() < kFrameHeaderBytes) return;
      try {
        connection->current = decode(connection->staging.data() + connection->staged_begin);
      } catch (const Error& e) {
        drop_broken_stream(connection, "sent bytes that are not a frame (" + e.message() + ")");
        return;
      }
      // A piece not announced yet stays staged, header and all, and the stream unread.
      if (connection->current.kind == FrameKind::kStripe && carries_pieces_to_us(*connection) &&
          !piece_due_or_wait(connection)) {
        return;
      }
      connection->staged_begin += kFrameHeaderBytes;
      begin_frame(connection);
      if (connection->state != ConnectionState::kReady) return;  // dropped
      if (connection->parked) return;  // the payload (and all behind it) stays where it is
      if (connection->payload_left == 0) finish_frame(connection);
      continue;
    }
    if (connection->payload_left == 0) {  // an empty payload that was parked, now resumed
      finish_frame(connection);
      continue;
    }
    std::size_t take = std::min<uint64_t>(connection->staged(), connection->payload_left);
    if (take == 0) return;
    if (connection->payload_target) {
      std::memcpy(connection->payload_target, connection->staging.data() + connection->staged_begin,
                  take);
      connection->payload_target += take;
    }
    connection->staged_begin += take;
    connection->payload_left -= take;
    if (connection->payload_left == 0) finish_frame(connection);
  }
}

// Every length and rank in a header is checked before anything is allocated or matched for it:
// a frame no weft rank sends drops the peer (drop_broken_stream), never the rank.
void TcpPath::begin_frame(TcpConnection* connection) {
  const FrameHeader& header = connection->current_frame();
  if (std::string wrong = what_is_wrong_with(connection, header); !wrong.empty()) {
    drop_broken_stream(connection, wrong);
    return;
  }
  const bool piece = header.kind == FrameKind::kStripe;
  if (piece ? !carries_pieces_to_us(*connection)
            : header.kind == FrameKind::kData && connection->stream > 0) {
    drop_broken_stream(connection, piece ? "sent a piece of a striped message on connection " +
                                               std::to_string(connection->stream) +
                                               ", which it did not open for pieces"
                                         : "sent a message on connection " +
                                               std::to_string(connection->stream) +
                                               ", which carries pieces of messages only");
    return;
  }
  connection->in_payload = true;
  connection->payload_left = header.bytes;
  connection->payload_target = nullptr;
  if (piece) {
    begin_piece(connection);
    return;
  }
  if (header.kind != FrameKind::kData) {
    if (header.kind == FrameKind::kGoodbye) connection->goodbye_received = true;
    connection->control_payload.resize(header.bytes);
    connection->payload_target = connection->control_payload.data();
    return;
  }
  if (connection->stream == 0) note_carrier(connection);
  // A payload stays in the socket as long as the Router wants: nothing of it is read yet
  // beyond what the staging buffer holds.
  Arrival arrival = events_.begin_arrival(header, /*may_park=*/true);
  if (arrival.parked) {
    park(connection, arrival.unexpected);
    return;
  }
  take_arrival(connection, arrival);
}

void TcpPath::take_arrival(TcpConnection* connection, Arrival& arrival) {
  const FrameHeader& header = connection->current_frame();
  if (header.stripes > 1 && !arrival.no_room) {
    auto message = std::make_shared<StripedArrival>(std::move(arrival.receive), arrival.unexpected,
                                                    connection->peer, header.stripes);
    connection->bound_striped = message;
    connection->payload_left = piece_of(header.bytes, header.stripes, 0).bytes;
    connection->payload_target = message->target(0);
    announce_pieces(connection, message);
    return;
  }
  if (arrival.receive) {
    connection->bound_receive = std::move(arrival.receive);
    connection->payload_target = static_cast<uint8_t*>(connection->bound_receive->data);
  } else if (arrival.unexpected) {
    connection->bound_unexpected = arrival.unexpected;
    connection->payload_target = arrival.unexpected->buffer.get();
  }
  if (arrival.no_room) {
    drop_broken_stream(connection, "sent a message of " + std::to_string(header.bytes) +
                                       " bytes that nobody waited for yet, and this rank could "
                                       "not allocate a buffer that large");
  }
}

void TcpPath::park(TcpConnection* connection, UnexpectedMessage* message) {
  connection->parked = message;
  connection->parked_since = std::chrono::steady_clock::now();
  parked_count_.fetch_add(1);  // seq_cst, with the loop's turning to slow ticks (after_batch)
  {
    util::MutexLock watch_lock(connection->watch_mutex);
    connection->holds_parked = true;
    rewatch_locked(connection);
  }
  tick_loop_fast();  // it resumes the payload when wanted, or park_limit from now
}

bool TcpPath::resume_parked(TcpConnection* connection, bool give_up) {
  Arrival arrival = events_.resume_arrival(connection->parked, give_up);
  if (arrival.parked) return false;
  connection->parked = nullptr;
  parked_count_.fetch_sub(1);
  {
    util::MutexLock watch_lock(connection->watch_mutex);
    connection->holds_parked = false;
    if (connection->state != ConnectionState::kClosed) rewatch_locked(connection);
  }
  take_arrival(connection, arrival);
  if (connection->state != ConnectionState::kReady) return false;
  // The payload's first bytes may be staged already, and the frames behind it too.
  parse_frames(connection);
  return connection->state == ConnectionState::kReady;
}

void TcpPath::resume_parked_connections(std::chrono::steady_clock::time_point now) {
  for (const std::unique_ptr<Peer>& peer : peers_) {
    for (const std::atomic<TcpConnection*>& slot : peer->inbound) {
      TcpConnection* connection = slot.load(std::memory_order_acquire);
      if (!connection) break;
      // A poller holding it reads it, and resumes what it may itself.
      if (!connection->in_mutex.try_lock()) continue;
      util::MutexLock in_lock(connection->in_mutex, std::adopt_lock);
      if (!connection->parked || connection->state != ConnectionState::kReady) continue;
      if (!resume_parked(connection, now - connection->parked_since >= options_.park_limit))
        continue;
      read_on_loop(connection);
    }
  }
}

void TcpPath::parked_message_wanted() {
  if (parked_count_.load() == 0) return;
  event_loop_.wake();
}

std::string TcpPath::what_is_wrong_with(const TcpConnection* connection,
                                        const FrameHeader& header) const {
  return frame_header_problem(header, connection->peer,
                              FrameLimits{kMaxDataPayload, kMaxControlPayload});
}

// What the peer sends can no longer be parsed or held: nothing more will arrive from it, so it
// is failed as if it had died (and the others are told), with what it sent. in_mutex held: the
// event loop or a poller is reading the connection.
void TcpPath::drop_broken_stream(TcpConnection* connection, const std::string& what) {
  int peer = connection->peer;
  std::string message = "rank " + std::to_string(peer) + " (" + connection->address + ") " + what +
                        "; its connection was dropped";
  util::log_error(util::Subsys::kTransport, [&] { return message; });
  close_connection(connection);
  auto error = peer_error(peer, ErrorCode::kPeerFailure, message);
  fail_inbound(connection, error);
  events_.peer_lost(peer, error, /*died=*/true);
}

void TcpPath::fail_inbound(TcpConnection* connection, const std::shared_ptr<const Error>& why) {
  if (RequestPtr receive = std::move(connection->bound_receive)) {
    connection->bound_receive.reset();
    receive->fail(why);
  }
  if (UnexpectedMessage* message = std::exchange(connection->bound_unexpected, nullptr)) {
    events_.abandon_arrival(message, why);
  }
  if (UnexpectedMessage* message = std::exchange(connection->parked, nullptr)) {
    parked_count_.fetch_sub(1);
    events_.abandon_arrival(message, why);
  }
  if (std::shared_ptr<StripedArrival> message = std::move(connection->bound_striped)) {
    connection->bound_striped.reset();
    message->piece_done(events_, why);
  }
  if (carries_pieces_to_us(*connection)) fail_due_pieces(connection, why);
}

void TcpPath::finish_frame(TcpConnection* connection) {
  connection->in_payload = false;
  connection->payload_target = nullptr;
  const FrameHeader& header = connection->current_frame();
  if (std::shared_ptr<StripedArrival> message = std::move(connection->bound_striped)) {
    connection->bound_striped.reset();
    message->piece_done(events_, nullptr);
    return;
  }
  if (header.kind != FrameKind::kData) {
    handle_control(connection);
    return;
  }
  if (RequestPtr receive = std::move(connection->bound_receive)) {
    connection->bound_receive.reset();
    receive->source = static_cast<int>(header.source);
    receive->complete();
    return;
  }
  if (UnexpectedMessage* message = std::exchange(connection->bound_unexpected, nullptr)) {
    events_.finish_arrival(message);
  }
}

void TcpPath::handle_control(TcpConnection* connection) {
  const FrameHeader& header = connection->current_frame();
  std::string text(connection->control_payload.begin(), connection->control_payload.end());
  std::string from = "rank " + std::to_string(connection->peer);
  if (header.kind == FrameKind::kPeerFailed) {
    int failed = static_cast<int>(header.tag);
    if (failed < 0 || failed >= options_.world_size || failed == options_.rank) return;
    events_.peer_lost(
        failed, peer_error(failed, ErrorCode::kPeerFailure, text + " (reported by " + from + ")"),
        /*died=*/true);
  } else if (header.kind == FrameKind::kContextAbort) {
    events_.context_aborted(
        header.context,
        std::make_shared<const Error>(ErrorCode::kAborted, text + " (reported by " + from + ")"));
  }
}

}  // namespace weft::transport
