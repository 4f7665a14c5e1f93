// TcpPath: the handshake of a connection, and which connection a pair of ranks keeps when both
// dial (docs/transport.md, "One connection per pair").

#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "transport/tcp/handshake.h"
#include "transport/tcp/proof_wait.h"
#include "transport/tcp/tcp_path.h"
#include "util/hmac.h"
#include "util/log.h"

namespace weft::transport {

bool TcpPath::parse_handshake(TcpConnection* connection) {
  const uint8_t* bytes = connection->staging.data() + connection->staged_begin;
  std::size_t size = connection->staged();
  switch (connection->state.load()) {
    case ConnectionState::kAwaitHello:
      return on_hello(connection, bytes, size);
    case ConnectionState::kAwaitProof:
      return on_proof(connection, bytes, size);
    case ConnectionState::kAwaitChallenge:
      return on_challenge(connection, bytes, size);
    case ConnectionState::kAwaitAck:
      return on_ack(connection, bytes, size);
    default:
      return false;
  }
}

// Accepting side, first message: who claims to connect, and its nonce. We answer with our
// nonce and our proof, bound to both nonces and both ranks.
bool TcpPath::on_hello(TcpConnection* connection, const uint8_t* bytes, std::size_t size) {
  std::optional<Hello> hello;
  try {
    hello = parse_hello(bytes, size);
  } catch (const Error& e) {
    refuse_incoming(connection, e.message());
    return false;
  }
  if (!hello) return false;
  connection->staged_begin += kHelloBytes;
  if (hello->stream >= kMaxStripes) {
    refuse_incoming(connection, "it claims to open connection " + std::to_string(hello->stream) +
                                    " of a peer pair (at most " + std::to_string(kMaxStripes) +
                                    ")");
    return false;
  }
  connection->stream = hello->stream;
  if (hello->world_size != static_cast<uint32_t>(options_.world_size) ||
      hello->rank >= static_cast<uint32_t>(options_.world_size) ||
      hello->rank == static_cast<uint32_t>(options_.rank)) {
    Challenge refusal;
    refusal.status = HandshakeStatus::kBadRank;
    refusal.rank = static_cast<uint32_t>(options_.rank);
    send_handshake(connection, encode_challenge(refusal));
    refuse_incoming(connection, "it claims rank " + std::to_string(hello->rank) + " of " +
                                    std::to_string(hello->world_size) + ": " +
                                    describe(HandshakeStatus::kBadRank));
    return false;
  }
  HandshakeTranscript& handshake = connection->handshake;
  handshake.connecting_nonce = hello->nonce;
  handshake.accepting_nonce = util::fresh_nonce();
  handshake.connecting_rank = hello->rank;
  handshake.accepting_rank = static_cast<uint32_t>(options_.rank);
  handshake.world_size = hello->world_size;
  Challenge challenge{HandshakeStatus::kOk, handshake.accepting_rank, handshake.accepting_nonce,
                      handshake_mac(options_.job_token, HandshakeSide::kAccepting, handshake)};
  if (!send_handshake(connection, encode_challenge(challenge))) {
    refuse_incoming(connection, "could not send it our challenge");
    return false;
  }
  connection->proof_due =
      std::chrono::steady_clock::now() + proof_wait(options_.proof_wait,
                                                    util::round_trip_time(connection->fd.get()),
                                                    options_.handshake_timeout);
  connection->claimed_rank = static_cast<int>(hello->rank);
  connection->state = ConnectionState::kAwaitProof;
  return true;
}

// Accepting side, second message: the connecting rank's proof. Only a valid one makes the
// connection a rank's: until then it belongs to nobody, and its loss fails nothing.
bool TcpPath::on_proof(TcpConnection* connection, const uint8_t* bytes, std::size_t size) {
  std::optional<Proof> proof;
  const HandshakeTranscript& handshake = connection->handshake;
  std::string claimed = "claiming rank " + std::to_string(handshake.connecting_rank);
  try {
    proof = parse_proof(bytes, size);
  } catch (const Error& e) {
    refuse_incoming(connection, claimed + ": " + e.message());
    return false;
  }
  if (!proof) return false;
  connection->staged_begin += kProofBytes;
  if (proof->status != HandshakeStatus::kOk) {
    // It found our proof wrong: it is not of this job, or has another token.
    refuse_incoming(connection,
                    claimed + ": it refused our proof (" + describe(proof->status) + ")");
    return false;
  }
  util::Digest expected = handshake_mac(options_.job_token, HandshakeSide::kConnecting, handshake);
  bool valid = util::same_digest(proof->mac, expected);
  // A stream is the peer's before our ack: the peer stripes a message over it as soon as the ack
  // comes, and that message's header, arriving on another connection, looks for it.
  if (valid && connection->stream > 0) adopt_as_peers(connection);
  Ack ack{valid ? HandshakeStatus::kOk : HandshakeStatus::kBadToken,
          static_cast<uint32_t>(options_.rank)};
  bool sent = send_handshake(connection, encode_ack(ack));
  if (!valid || !sent) {
    refuse_incoming(connection,
                    claimed + ": " + (valid ? "could not send it our ack" : describe(ack.status)));
    return false;
  }
  if (connection->stream == 0) adopt_as_peers(connection);
  became_ready(connection);
  return true;
}

void TcpPath::adopt_as_peers(TcpConnection* connection) {
  util::MutexLock lock(mutex_);
  connection->peer = static_cast<int>(connection->handshake.connecting_rank);
  Peer& peer = *peers_[connection->peer];
  peer.connections.push_back(connection);
  if (connection->stream > 0) {
    peer.in_streams[connection->stream].store(connection, std::memory_order_release);
    return;
  }
  note_seen_at_locked(peer, *connection);
  if (TcpConnection* ours = peer.sender.load(); !ours) {
    peer.sender.store(connection, std::memory_order_release);
  } else if (ours->outgoing && (connection->peer < options_.rank || !sent_proof(*ours))) {
    hand_over_locked(peer, ours, connection);
  }
}

void TcpPath::note_seen_at_locked(Peer& peer, const TcpConnection& connection) {
  if (!peer.known.load(std::memory_order_acquire) || peer.seen_at.load() >= 0) return;
  if (int index = candidate_on_host(peer, connection.remote_host); index >= 0) {
    peer.seen_at.store(index, std::memory_order_release);
  }
}

// Both ranks dialled at once. A dial that has not sent its proof yet gives way to the peer's
// connection, and closes before it proves (the peer never takes it for ours). Otherwise the lower
// rank sends on its own dial (the connection just adopted), and so does the higher unless its
// own has carried no message yet: then it sends on this one too. Either way one connection
// carries both directions, and a round trip's acknowledgement rides on the reply instead of a
// segment of its own.
void TcpPath::hand_over_locked(Peer& peer, TcpConnection* ours, TcpConnection* theirs) {
  util::MutexLock our_lock(ours->send_mutex);
  if (ours->broken || ours->handed_over_to) return;
  // A ready dial that carried a message keeps the order of our messages only by staying the
  // sender; one with a queue may be in the middle of a frame. An unready one wrote nothing.
  if (ours->ready && (ours->carried_data || !ours->queue.empty())) {
    util::log_debug(util::Subsys::kTransport, [&] {
      return "rank " + std::to_string(options_.rank) + " keeps sending to rank " +
             std::to_string(theirs->peer) + " on its own connection (" + ours->address +
             "), which carries its frames already: the pair uses two connections";
    });
    return;
  }
  util::MutexLock their_lock(theirs->send_mutex);
  while (!ours->queue.empty()) {
    theirs->queue.push_back(std::move(ours->queue.front()));
    ours->queue.pop_front();
  }
  ours->handed_over_to = theirs;
  peer.sender.store(theirs, std::memory_order_release);
  if (ours->held && ours->state == ConnectionState::kDeferred) {
    // Never started: nothing to close, nothing to read.
    ours->held = false;
    held_dials_.fetch_sub(1);
    ours->broken = true;
    ours->state = ConnectionState::kClosed;
  } else if (ours->held) {
    release_held_locked(ours, "it handed over, and carries control frames");
  }
  util::log_debug(util::Subsys::kTransport, [&] {
    return "rank " + std::to_string(options_.rank) + " sends to rank " +
           std::to_string(theirs->peer) + " on the connection it made (" + theirs->address + ")";
  });
}

std::size_t TcpPath::inbound_buffer_bytes(int peer) const {
  std::size_t bytes = 0;
  for (const std::atomic<TcpConnection*>& slot : peers_[peer]->inbound) {
    TcpConnection* connection = slot.load(std::memory_order_acquire);
    if (!connection) break;
    util::MutexLock in_lock(connection->in_mutex);
    bytes += connection->staging.capacity();
  }
  return bytes;
}

bool TcpPath::sends_on_own_dial(int peer) const {
  const TcpConnection* sender = peers_[peer]->sender.load(std::memory_order_acquire);
  return sender && sender->outgoing;
}

bool TcpPath::awaits_proof_from(int peer) const {
  util::MutexLock lock(mutex_);
  return peer_proving_locked(peer, std::chrono::steady_clock::now());
}

bool TcpPath::holds_dial_to(int peer) const {
  TcpConnection* sender = peers_[peer]->sender.load(std::memory_order_acquire);
  if (!sender || !sender->outgoing) return false;
  util::MutexLock lock(sender->send_mutex);
  return sender->held;
}

bool TcpPath::handed_over(TcpConnection* connection) {
  if (!connection->outgoing || connection->stream > 0) return false;
  util::MutexLock lock(connection->send_mutex);
  return connection->handed_over_to != nullptr;
}

void TcpPath::retire_handed_over(TcpConnection* connection, const std::string& why) {
  util::log_debug(util::Subsys::kTransport, [&] {
    return "rank " + std::to_string(options_.rank) + " closes its spare connection to rank " +
           std::to_string(connection->peer) + " at " + connection->address + " (" + why + ")";
  });
  close_connection(connection);
}

// Connecting side, first answer: the accepting rank's nonce and proof. We prove ourselves only
// to a rank that has proved itself.
bool TcpPath::on_challenge(TcpConnection* connection, const uint8_t* bytes, std::size_t size) {
  if (handed_over(connection)) {
    // Closed before our proof: the peer never took this dial for ours, so it never sends on it.
    retire_handed_over(connection, "the peer's own connection came first");
    return false;
  }
  std::optional<Challenge> challenge;
  try {
    challenge = parse_challenge(bytes, size);
  } catch (const Error& e) {
    fail_outgoing_handshake(connection, ErrorCode::kUnauthorized, e.message());
    return false;
  }
  if (!challenge) return false;
  connection->staged_begin += kChallengeBytes;
  if (challenge->status != HandshakeStatus::kOk) {
    fail_outgoing_handshake(
        connection, ErrorCode::kUnauthorized,
        std::string("it refused our connection: ") + describe(challenge->status));
    return false;
  }
  if (challenge->rank != static_cast<uint32_t>(connection->peer)) {
    fail_outgoing_handshake(connection, ErrorCode::kUnauthorized,
                            "it answered as rank " + std::to_string(challenge->rank));
    return false;
  }
  HandshakeTranscript& handshake = connection->handshake;
  handshake.accepting_nonce = challenge->nonce;
  util::Digest expected = handshake_mac(options_.job_token, HandshakeSide::kAccepting, handshake);
  if (!util::same_digest(challenge->mac, expected)) {
    // Tell it why we leave, so that its log says so too; our proof is not sent.
    send_handshake(connection, encode_proof({HandshakeStatus::kBadToken, {}}));
    fail_outgoing_handshake(connection, ErrorCode::kUnauthorized,
                            std::string("we refused it: its proof failed (") +
                                describe(HandshakeStatus::kBadToken) + ")");
    return false;
  }
  Proof proof{HandshakeStatus::kOk,
              handshake_mac(options_.job_token, HandshakeSide::kConnecting, handshake)};
  if (!send_handshake(connection, encode_proof(proof))) {
    fail_outgoing_handshake(connection, ErrorCode::kPeerFailure, "could not send it our proof");
    return false;
  }
  connection->state = ConnectionState::kAwaitAck;
  return true;
}

// Connecting side, last message: the accepting rank accepted our proof.
bool TcpPath::on_ack(TcpConnection* connection, const uint8_t* bytes, std::size_t size) {
  std::optional<Ack> ack;
  try {
    ack = parse_ack(bytes, size);
  } catch (const Error& e) {
    fail_outgoing_handshake(connection, ErrorCode::kUnauthorized, e.message());
    return false;
  }
  if (!ack) return false;
  connection->staged_begin += kAckBytes;
  if (ack->status != HandshakeStatus::kOk || ack->rank != static_cast<uint32_t>(connection->peer)) {
    fail_outgoing_handshake(connection, ErrorCode::kUnauthorized,
                            std::string("it refused our connection: ") + describe(ack->status));
    return false;
  }
  note_reached(connection);
  became_ready(connection);
  return true;
}

// Handshake messages are tiny and the socket's buffer is empty then: one send takes them whole
// or the connection is broken.
bool TcpPath::send_handshake(TcpConnection* connection, const std::vector<uint8_t>& message) {
  errno = 0;
  ssize_t sent = ::send(connection->fd.get(), message.data(), message.size(), MSG_NOSIGNAL);
  return sent == static_cast<ssize_t>(message.size());
}

void TcpPath::refuse_incoming(TcpConnection* connection, const std::string& why) {
  refusals_.warn([&] { return "refused a connection from " + connection->address + ": " + why; });
  close_connection(connection);
}

// Our connection to a peer failed its handshake: everything waiting on the peer fails with the
// reason (not as a death: the peer may be fine, and nothing is flooded).
void TcpPath::fail_outgoing_handshake(TcpConnection* connection, ErrorCode code,
                                      const std::string& why) {
  if (connection->stream > 0) {
    give_up_stream(connection, "it failed the handshake: " + why);
    return;
  }
  if (handed_over(connection)) {
    retire_handed_over(connection, "it failed the handshake: " + why);
    return;
  }
  int peer = connection->peer;
  // Another address of the peer may lead to the right rank: this one led elsewhere (another
  // job's process, a stranger) or nowhere.
  std::string at = connection->address;
  if (dial_next_candidate(connection, "failed the handshake (" + why + ")")) return;
  std::string tried;
  {
    util::MutexLock lock(mutex_);
    if (peers_[peer]->dial && peers_[peer]->dial->size() > 1) {
      tried = " (tried " + peers_[peer]->dial->failures() + ")";
    }
  }
  std::string what =
      "rank " + std::to_string(peer) + " at " + at + " failed the handshake: " + why + tried;
  util::log_error(util::Subsys::kTransport, [&] { return what; });
  close_connection(connection);
  events_.peer_lost(peer,
                    peer_error(peer, code, what + " (is it part of this job, with its token?)"),
                    /*died=*/false);
}

void TcpPath::became_ready(TcpConnection* connection) {
  connection->stage_frames();
  connection->state = ConnectionState::kReady;
  util::log_debug(util::Subsys::kTransport, [&] {
    return "rank " + std::to_string(options_.rank) + " connected with rank " +
           std::to_string(connection->peer) + " (" + connection->address + ")";
  });
  // A peer we meet only now must still learn what we know: the deaths, and the contexts
  // aborted, go ahead of anything else on this connection.
  bool hold = false;
  if (connection->stream == 0) {
    util::MutexLock lock(mutex_);
    for (std::atomic<TcpConnection*>& slot : peers_[connection->peer]->inbound) {
      if (slot.load(std::memory_order_relaxed)) continue;
      slot.store(connection, std::memory_order_release);
      break;
    }
    hold = should_hold_locked(connection);
  }
  std::vector<OutboundFrame> news;
  PathEvents::News known = events_.news_for_new_peer();
  for (const auto& [peer, text] : known.deaths) {
    if (peer != connection->peer) {
      news.push_back(control_frame(FrameKind::kPeerFailed, 0, static_cast<uint64_t>(peer), text));
    }
  }
  for (const auto& [context, text] : known.aborted_contexts) {
    news.push_back(control_frame(FrameKind::kContextAbort, context, 0, text));
  }
  util::MutexLock lock(connection->send_mutex);
  for (auto it = news.rbegin(); it != news.rend(); ++it) {
    connection->queue.push_front(std::move(*it));
  }
  choose_zerocopy_locked(connection);
  if (hold) {
    connection->held = true;
    held_dials_.fetch_add(1);
    loop_ticks_fast_.store(true);  // this is the loop: its next turn sees it
    util::log_debug(util::Subsys::kTransport, [&] {
      return "rank " + std::to_string(options_.rank) + " holds its connection to rank " +
             std::to_string(connection->peer) + " (" + connection->address + "): rank " +
             std::to_string(connection->peer) + "'s own connection to it awaits its proof";
    });
    return;
  }
  connection->ready = true;
  flush_locked(connection);
}

bool TcpPath::should_hold_locked(const TcpConnection* connection) const {
  // Only the higher rank hands its dial over once it is ready (hand_over_locked).
  if (!connection->outgoing || connection->stream != 0 || connection->peer >= options_.rank) {
    return false;
  }
  if (peers_[connection->peer]->sender.load(std::memory_order_acquire) != connection) return false;
  return peer_proving_locked(connection->peer, std::chrono::steady_clock::now());
}

bool TcpPath::peer_proving_locked(int peer, std::chrono::steady_clock::time_point now) const {
  for (const std::unique_ptr<TcpConnection>& other : connections_) {
    // The state first: on_hello sets the stream before it, and any thread may be reading.
    if (!other->outgoing && other->state == ConnectionState::kAwaitProof && other->stream == 0 &&
        other->claimed_rank.load() == peer && other->proof_due.load() > now) {
      return true;
    }
  }
  return false;
}

void TcpPath::release_held_locked(TcpConnection* connection, const char* why) {
  connection->held = false;
  held_dials_.fetch_sub(1);
  util::log_debug(util::Subsys::kTransport, [&] {
    return "rank " + std::to_string(options_.rank) +
           " stops waiting to use its connection to rank " + std::to_string(connection->peer) +
           " (" + connection->address + "): " + why;
  });
  if (connection->broken) return;  // the peer failed meanwhile
  if (connection->state == ConnectionState::kDeferred) {
    try {
      start_dial_locked(connection);
    } catch (const Error& e) {  // out of descriptors: the next turn tries again
      connection->held = true;
      held_dials_.fetch_add(1);
      util::log_warn(util::Subsys::kTransport, [&] { return e.message(); });
    }
    return;
  }
  connection->ready = true;
  flush_locked(connection);
}

void TcpPath::release_due_holds(std::chrono::steady_clock::time_point now) {
  util::MutexLock lock(mutex_);
  for (const std::unique_ptr<TcpConnection>& connection : connections_) {
    if (!connection->outgoing || connection->stream != 0) continue;
    util::MutexLock send_lock(connection->send_mutex);
    if (connection->held && !peer_proving_locked(connection->peer, now)) {
      release_held_locked(connection.get(),
                          "its own connection to us failed its handshake or did not prove itself "
                          "in time");
    }
  }
}

}  // namespace weft::transport
