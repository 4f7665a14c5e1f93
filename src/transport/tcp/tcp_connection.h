// TcpConnection — one TCP socket to one peer: its handshake state, its queue of outgoing
// frames, and the state of the frame it is currently receiving.
//
// Ownership: owned by TcpPath. A connection that became a rank's (ready, or outgoing) lives
// until the transport is destroyed, closed ones too (fd closed, buffers released), so peers and
// pollers may hold raw pointers to it. One that never did (a stranger, a failed incoming
// handshake) is destroyed by the event loop once closed, between two batches of events, so
// that strangers cannot grow the transport. Locking (see tcp_path.h):
// `in_mutex` guards the inbound fields and is held by the event loop while it reads;
// `send_mutex` guards the queue, `ready`, and writes to the socket.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "transport/frame_header.h"
#include "transport/matcher.h"
#include "transport/request.h"
#include "transport/tcp/handshake.h"
#include "transport/tcp/striped_message.h"
#include "transport/tcp/zerocopy.h"
#include "util/mutex.h"
#include "util/ring_deque.h"
#include "util/socket.h"

namespace weft::transport {

struct OutboundFrame {
  uint8_t header[kFrameHeaderBytes];
  const uint8_t* payload = nullptr;
  std::size_t payload_bytes = 0;
  std::vector<uint8_t> owned;  // control frames (and cancelled sends) own their payload
  RequestPtr request;          // null for control frames
  // One piece of a striped send (streams.h): `request` completes with the last piece written.
  std::shared_ptr<StripedSend> striped;
  // Part of its payload went out zero-copy (zerocopy.h): the kernel may still read the caller's
  // buffer.
  std::shared_ptr<ZerocopyTicket> zerocopy;
  std::size_t sent = 0;  // of header + payload

  std::size_t total() const { return kFrameHeaderBytes + payload_bytes; }
};

// The handshake's states (handshake.h): an accepting connection waits for the hello, then for
// the proof; a connecting one for the challenge, then for the ack.
enum class ConnectionState {
  kDeferred,  // our dial, not started: the peer's own connection to us awaits its proof
  kConnecting,
  kAwaitHello,
  kAwaitChallenge,
  kAwaitProof,
  kAwaitAck,
  kReady,
  kClosed
};

// Payload bytes a data frame may announce: the largest buffer a process can address (x86-64 and
// AArch64 give user space 47 or 48 bits), so no real message is longer. A longer announcement
// is a corrupt or hostile stream, refused before anything is allocated for it.
inline constexpr uint64_t kMaxDataPayload = uint64_t{1} << 47;
// Control frames carry a short text (why a rank died or aborted); a longer one is cut to this.
inline constexpr uint64_t kMaxControlPayload = 64 * 1024;

inline bool in_handshake(ConnectionState state) {
  return state == ConnectionState::kAwaitHello || state == ConnectionState::kAwaitChallenge ||
         state == ConnectionState::kAwaitProof || state == ConnectionState::kAwaitAck;
}

class TcpConnection {
 public:
  // Staging of a connection whose peer sends in bulk (a read filled the smaller one): frames
  // are read in large gulps.
  static constexpr std::size_t kStagingBytes = 256 * 1024;
  // Staging once ready: a frame's header and a small message. Many connections never need
  // more: the spare one of a pair that dialled each other at once carries control frames only,
  // and a peer that exchanges small messages one at a time sends no gulp to read.
  static constexpr std::size_t kReadyStagingBytes = 4 * 1024;
  // Staging during the handshake: its messages have a fixed size (handshake.h), and a
  // connection that has not proved itself must cost next to nothing.
  static constexpr std::size_t kHandshakeStagingBytes =
      std::max({kHelloBytes, kChallengeBytes, kProofBytes, kAckBytes});

  TcpConnection(util::Fd fd, bool outgoing, int peer, std::string address)
      : fd(std::move(fd)), outgoing(outgoing), peer(peer), address(std::move(address)) {
    staging.resize(kHandshakeStagingBytes);
  }

  util::Fd fd;
  const bool outgoing;
  int peer;  // -1 until an incoming connection's proof is verified
  // 0: a connection that carries any message. 1 and up: an extra connection its dialer sends
  // only pieces of striped messages on (streams.h); set before the connection is a peer's.
  uint32_t stream = 0;
  std::string address;
  // An accepted connection's: the host it came from (its address without the port, which is
  // not where the peer listens). Set before the connection is known to any other thread.
  std::string remote_host;
  // When it was accepted or began to connect: its handshake must end within the timeout.
  std::chrono::steady_clock::time_point accepted_at = std::chrono::steady_clock::now();

  // --- handshake and lifetime (event loop, or under the transport lock) ----------------------
  std::atomic<ConnectionState> state{ConnectionState::kConnecting};  // read by any thread
  int connect_errno = 0;          // a connect() that failed at once
  HandshakeTranscript handshake;  // nonces and ranks, as far as the handshake has come
  // An incoming connection between hello and proof: the rank its hello claims, and when its
  // proof is due (proof_wait.h); set before its state says so, read by any thread.
  std::atomic<int> claimed_rank{-1};
  std::atomic<std::chrono::steady_clock::time_point> proof_due{};
  bool goodbye_received = false;

  // --- outbound (send_mutex) -----------------------------------------------------------------
  util::Mutex send_mutex WEFT_ACQUIRED_BEFORE(watch_mutex);
  bool ready WEFT_GUARDED_BY(send_mutex) = false;   // handshake done: frames may be written
  bool broken WEFT_GUARDED_BY(send_mutex) = false;  // writes failed or the peer failed: dropped
  util::RingDeque<OutboundFrame> queue WEFT_GUARDED_BY(send_mutex);
  // A message (not a control frame) was posted to it: once ready, the connection must stay its
  // rank's sender, so that messages keep their order.
  bool carried_data WEFT_GUARDED_BY(send_mutex) = false;
  // Our dial gave its queue, before it carried a message, to the peer's own connection to us,
  // which both sides then send on (TcpPath::hand_over_locked): messages posted to it go there.
  TcpConnection* handed_over_to WEFT_GUARDED_BY(send_mutex) = nullptr;
  // Our dial to a peer whose own connection to us awaits its proof (proof_wait.h): not started
  // (kDeferred), or ready but writing nothing (`ready` false), until that proof comes (the dial
  // hands over), fails, or is overdue.
  bool held WEFT_GUARDED_BY(send_mutex) = false;

  // --- what the event loop watches, once ready (watch_mutex) ---------------------------------
  util::Mutex watch_mutex;
  // Frames wait for EPOLLOUT; written under send_mutex too.
  bool want_write WEFT_GUARDED_BY(watch_mutex) = false;
  // False while a waiting thread reads it (then out of the epoll set, unless it waits for
  // EPOLLOUT).
  bool read_by_loop WEFT_GUARDED_BY(watch_mutex) = true;
  // A payload is parked in the socket (EPOLLIN not watched: its bytes would wake the loop on
  // every turn). Written under in_mutex too.
  bool holds_parked WEFT_GUARDED_BY(watch_mutex) = false;
  // A stream whose next piece was not announced yet: not watched at all (its bytes, and its
  // end, wait until the piece's header has come on the first connection).
  bool awaits_piece WEFT_GUARDED_BY(watch_mutex) = false;
  uint32_t watched WEFT_GUARDED_BY(watch_mutex) = 0;   // the events last given to epoll
  bool in_epoll WEFT_GUARDED_BY(watch_mutex) = false;  // its fd is in the loop's epoll set
  // want_write as seen with send_mutex held, not watch_mutex: every write of it holds both.
  // Not analysed: the analysis knows one guard per member.
  bool want_write_for_sender() const WEFT_REQUIRES(send_mutex) WEFT_NO_THREAD_SAFETY_ANALYSIS {
    return want_write;
  }

  // Writes queued frames until the queue is empty or the socket is full. Completes the
  // requests of fully written frames (of those sent zero-copy, once the kernel released them
  // too). Returns false when the socket failed (errno in *error).
  bool flush_locked(int* error) WEFT_REQUIRES(send_mutex);
  // With nothing queued: writes `frame` at once, and completes its send if the socket took all
  // of it (true). Otherwise the frame records what was written, for the caller to queue; a
  // failure is left for flush_locked to meet again.
  bool write_alone_locked(OutboundFrame& frame) WEFT_REQUIRES(send_mutex);

  // --- zero-copy sends (zerocopy.h; send_mutex) ----------------------------------------------
  // Payloads from kZerocopyMinBytes up are sent with MSG_ZEROCOPY.
  bool zerocopy WEFT_GUARDED_BY(send_mutex) = false;
  // Keep asking after the kernel reported a copy (tests: loopback always copies).
  bool zerocopy_when_copied WEFT_GUARDED_BY(send_mutex) = false;
  struct ZerocopyCall {
    uint32_t id;
    std::shared_ptr<ZerocopyTicket> ticket;
  };
  // The zero-copy sends the kernel has not released, in the order of their numbers.
  util::RingDeque<ZerocopyCall> zerocopy_calls WEFT_GUARDED_BY(send_mutex);
  uint32_t zerocopy_next_id WEFT_GUARDED_BY(send_mutex) = 0;
  uint64_t zerocopy_sends WEFT_GUARDED_BY(send_mutex) = 0;  // ever, for tests and logs
  // Reads the kernel's notices and completes the sends they release; true when there was one.
  bool reap_zerocopy_locked() WEFT_REQUIRES(send_mutex);
  // The kernel may still read `request`'s buffer (sent zero-copy, not released yet).
  bool lends_buffer_locked(const Request& request) const WEFT_REQUIRES(send_mutex);

  // --- inbound (in_mutex) --------------------------------------------------------------------
  util::Mutex in_mutex WEFT_ACQUIRED_BEFORE(send_mutex);
  std::vector<uint8_t> staging WEFT_GUARDED_BY(in_mutex);
  std::size_t staged_begin WEFT_GUARDED_BY(in_mutex) = 0;
  std::size_t staged_end WEFT_GUARDED_BY(in_mutex) = 0;
  bool in_payload WEFT_GUARDED_BY(in_mutex) = false;
  FrameHeader current WEFT_GUARDED_BY(in_mutex);
  uint64_t payload_left WEFT_GUARDED_BY(in_mutex) = 0;
  uint8_t* payload_target WEFT_GUARDED_BY(in_mutex) = nullptr;  // null: discard the payload
  RequestPtr bound_receive WEFT_GUARDED_BY(in_mutex);           // the receive the payload goes to
  UnexpectedMessage* bound_unexpected WEFT_GUARDED_BY(in_mutex) = nullptr;
  // The message whose payload is left in the socket for now (StreamedArrivalEvents::begin_arrival),
  // and since when: nothing after it is read until it is resumed.
  UnexpectedMessage* parked WEFT_GUARDED_BY(in_mutex) = nullptr;
  std::chrono::steady_clock::time_point parked_since WEFT_GUARDED_BY(in_mutex);
  std::vector<uint8_t> control_payload WEFT_GUARDED_BY(in_mutex);
  // The striped message whose piece the payload is (on the first connection, its first piece).
  std::shared_ptr<StripedArrival> bound_striped WEFT_GUARDED_BY(in_mutex);

  // --- an incoming stream's pieces to come, in order (piece_mutex) ---------------------------
  // Announced by whichever thread reads the peer's first connection, which holds that
  // connection's in_mutex, never this one's: so piece_mutex is a lock of its own.
  util::Mutex piece_mutex WEFT_ACQUIRED_BEFORE(watch_mutex);
  util::RingDeque<DuePiece> due_pieces WEFT_GUARDED_BY(piece_mutex);
  // The next frame is a piece and none is due: the reader stopped (awaits_piece).
  bool awaiting_piece WEFT_GUARDED_BY(piece_mutex) = false;
  // The stream ended: a piece announced now fails at once.
  bool pieces_closed WEFT_GUARDED_BY(piece_mutex) = false;
  // A piece was announced while the reader waited: the event loop reads it (TcpPath).
  std::atomic<bool> piece_announced{false};

  std::size_t staged() const WEFT_REQUIRES(in_mutex) { return staged_end - staged_begin; }
  // `current`, for a reference kept while it is handled (the analysis checks the lock here,
  // where the reference is taken: it does not follow a reference to a guarded member).
  const FrameHeader& current_frame() const WEFT_REQUIRES(in_mutex) { return current; }
  // Moves staged bytes to the front so that more can be read.
  void compact() WEFT_REQUIRES(in_mutex);
  // The handshake is done: room to read frames (in_mutex held; staged bytes are kept).
  void stage_frames() WEFT_REQUIRES(in_mutex);
  // A read filled the staging: room for large gulps from now on (staged bytes are kept).
  void grow_staging() WEFT_REQUIRES(in_mutex);
  // Closed: gives back the inbound buffers (in_mutex held, so that no reader is using them).
  void release_inbound_buffers() WEFT_REQUIRES(in_mutex);
};

}  // namespace weft::transport
