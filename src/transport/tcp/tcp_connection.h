// TcpConnection — one TCP socket to one peer: its handshake state, its queue of outgoing
// frames, and the state of the frame it is currently receiving.
//
// Ownership: owned by TcpTransport. A connection that became a rank's (ready, or outgoing) lives
// until the transport is destroyed, closed ones too (fd closed, buffers released), so peers and
// pollers may hold raw pointers to it. One that never did (a stranger, a failed incoming
// handshake) is destroyed by the event loop once closed, between two batches of events, so
// that strangers cannot grow the transport. Locking (see tcp_transport.h):
// `in_mutex` guards the inbound fields and is held by the event loop while it reads;
// `send_mutex` guards the queue, `ready`, and writes to the socket.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "transport/frame_header.h"
#include "transport/matcher.h"
#include "transport/request.h"
#include "transport/tcp/handshake.h"
#include "util/socket.h"

namespace weft::transport {

struct OutboundFrame {
  uint8_t header[kFrameHeaderBytes];
  const uint8_t* payload = nullptr;
  std::size_t payload_bytes = 0;
  std::vector<uint8_t> owned;  // control frames (and cancelled sends) own their payload
  RequestPtr request;          // null for control frames
  std::size_t sent = 0;        // of header + payload

  std::size_t total() const { return kFrameHeaderBytes + payload_bytes; }
};

// The handshake's states (handshake.h): an accepting connection waits for the hello, then for
// the proof; a connecting one for the challenge, then for the ack.
enum class ConnectionState {
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

inline bool in_handshake(ConnectionState state) {
  return state == ConnectionState::kAwaitHello || state == ConnectionState::kAwaitChallenge ||
         state == ConnectionState::kAwaitProof || state == ConnectionState::kAwaitAck;
}

class TcpConnection {
 public:
  // Staging once ready: frames are read in large gulps.
  static constexpr std::size_t kStagingBytes = 256 * 1024;
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
  std::string address;
  // When it was accepted or began to connect: its handshake must end within the timeout.
  std::chrono::steady_clock::time_point accepted_at = std::chrono::steady_clock::now();

  // --- handshake and lifetime (event loop, or under the transport lock) ----------------------
  std::atomic<ConnectionState> state{ConnectionState::kConnecting};  // read by any thread
  int connect_errno = 0;          // a connect() that failed at once
  HandshakeTranscript handshake;  // nonces and ranks, as far as the handshake has come
  bool goodbye_received = false;

  // --- outbound (send_mutex) -----------------------------------------------------------------
  std::mutex send_mutex;
  bool ready = false;   // handshake done: frames may be written
  bool broken = false;  // writes failed or the peer failed: frames are dropped
  std::deque<OutboundFrame> queue;

  // --- what the event loop watches, once ready (watch_mutex) ---------------------------------
  std::mutex watch_mutex;
  bool want_write = false;   // frames wait for EPOLLOUT; written under send_mutex too
  bool read_by_loop = true;  // false while a waiting thread reads it (EPOLLIN not watched)
  uint32_t watched = 0;      // the events last given to epoll

  // Writes queued frames until the queue is empty or the socket is full. Completes the
  // requests of fully written frames. Returns false when the socket failed (errno in *error).
  bool flush_locked(int* error);

  // --- inbound (in_mutex) --------------------------------------------------------------------
  std::mutex in_mutex;
  std::vector<uint8_t> staging;
  std::size_t staged_begin = 0;
  std::size_t staged_end = 0;
  bool in_payload = false;
  FrameHeader current;
  uint64_t payload_left = 0;
  uint8_t* payload_target = nullptr;  // null: discard the payload
  RequestPtr bound_receive;           // the receive the payload goes to
  UnexpectedMessage* bound_unexpected = nullptr;
  std::vector<uint8_t> control_payload;

  std::size_t staged() const { return staged_end - staged_begin; }
  // Moves staged bytes to the front so that more can be read.
  void compact();
  // The handshake is done: room to read frames (in_mutex held; staged bytes are kept).
  void grow_staging();
  // Closed: gives back the inbound buffers (in_mutex held, so that no reader is using them).
  void release_inbound_buffers();
};

}  // namespace weft::transport
