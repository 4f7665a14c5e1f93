// TcpPath — the TCP path (path.h) under the Router: any two hosts, IPv4 or IPv6.
//
// Design:
// - One listening socket per address it is told to listen on (usually one, [::] or a single
//   address). A connection to a peer is made on first use — a send to it, or a receive from
//   it — never all-to-all at start-up. A peer's addresses are given up front
//   (set_peer_candidates) or read when it is first needed (set_peer_lookup: the rendezvous
//   store), so that a rank learns about the peers it talks to, not the whole job. A peer may have
//   published several addresses: they are tried in the order given, each with a bounded connect
//   (candidate_dial.h), and the first whose handshake succeeds is the peer's address from then on
//   (logged at INFO). When both ranks dial at once, the pair still ends up on one connection
//   both ways, so an acknowledgement rides on each reply: a rank whose peer's connection is
//   between hello and proof waits for the proof instead of dialling (kDeferred); a dial that
//   has not sent its proof gives way to the peer's proved connection (hand_over_locked); a
//   higher rank's ready dial writes nothing while the lower rank's proof is coming
//   (should_hold_locked). Each wait is bounded (proof_wait.h). Two connections live on only
//   when both had carried messages: the order of messages per (sender, context, tag) holds
//   only on one connection, so each rank keeps sending on its own.
// - A challenge-response handshake in both directions (handshake.h) proves that both ends know
//   the job token, which never crosses the wire; a stranger is refused, logged and dropped.
// - One event-loop thread (epoll) reads every socket and finishes large writes. A send whose
//   queue is empty is written directly by the posting thread, and a thread waiting on a
//   request reads (the connection the peer's messages come on, once known: Peer::carrier) and
//   writes its peer's connection, and writes every other queue, itself: on
//   the fast path no message waits for the loop thread to wake. Payloads are read straight
//   into the matching receive's buffer (the Router matches: StreamedArrivalEvents::begin_arrival);
//   a message that arrives before its receive waits in the Router's pooled buffer, or, when the
//   Router says so (a large one, or any once its sender holds enough of our memory), in the
//   socket until its receive comes ("parked", StreamedArrivalEvents::begin_arrival).
// - A connection that ends without a goodbye means the peer died: the Router hears of it, fails
//   every pending request that names it, and has the news told to every other connected peer
//   (announce_death), as it does for a death a peer reports to us.
// - While a thread polls a request with a peer, and for kLingerMs after (the next wait usually
//   follows at once), the connection the poller reads is out of the loop's epoll set: a
//   wake-up of the loop per message would cost more than the message, and a socket in an epoll
//   set, even for its end alone, costs the kernel's receive path a callback per segment. The
//   poller hands a connection that ended back to the loop. A waiter about to sleep, or a
//   receive from anyone, has them watched again.
// - Several streams (streams.h): when the first large message to a peer is sent, we open up to
//   options.streams - 1 more connections to it (auto: from the link's speed), which carry only
//   pieces of striped messages, one way. A message from 2 * kSmallestStripe up is split across
//   the streams ready then: its header and first piece go on the peer's usual connection, piece
//   i on stream i, all under the peer's stripe_mutex so that every stream carries its pieces in
//   the order of their headers. The receiver, when the header comes (or its parked payload is
//   resumed), announces each piece to its stream (due_pieces); a stream whose next piece was
//   not announced yet is left unread. Streams are read by the event loop only. An extra
//   connection that cannot be made is given up (fewer streams); one that ends once made is
//   the peer's end like any other.
// - Zero-copy (zerocopy.h): where the setting and the link say so, a connection sends payloads
//   from kZerocopyMinBytes with MSG_ZEROCOPY; a send completes once the kernel's notice
//   releases it, read by the waiter that polls or by the loop on EPOLLERR.
// Code: tcp_path.cc (posting, connections, the event loop's work, failures),
// tcp_path_dial.cc (peers' addresses, dialing them), tcp_path_polling.cc (a waiter's own
// progress), tcp_path_sending.cc (writing, zero-copy), tcp_path_cancel.cc (cancel and detach),
// tcp_listeners.h (listening, accepting), epoll_loop.h (the loop's thread), tcp_path_handshake.cc
// (the handshake, and which connection a pair keeps), tcp_path_frames.cc (reading frames),
// tcp_path_streams.cc (several streams per peer). Locking: lock order is connection.in_mutex ->
// mutex_ -> connection.send_mutex -> connection.watch_mutex, peer.poll_mutex ->
// connection.watch_mutex, peer.stripe_mutex -> connection.send_mutex, and connection.in_mutex ->
// (another) connection.piece_mutex -> its watch_mutex. PathEvents is called with a connection's
// in_mutex at most (never mutex_). The event loop holds a connection's in_mutex while it reads into
// a receive's buffer, so cancel() can detach a receive mid-payload safely.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transport/departure_watch.h"
#include "transport/path.h"
#include "transport/streamed_arrivals.h"
#include "transport/tcp/candidate_dial.h"
#include "transport/tcp/epoll_loop.h"
#include "transport/tcp/tcp_connection.h"
#include "transport/tcp/tcp_listeners.h"
#include "util/mutex.h"
#include "util/socket.h"
#include "util/warning_limiter.h"

namespace weft::transport {

struct TcpPathOptions {
  int rank = 0;
  int world_size = 1;
  std::string job_token;
  util::SocketAddress listen_address;                      // port 0: any free port
  std::vector<util::SocketAddress> more_listen_addresses;  // each with a listener of its own
  std::chrono::milliseconds handshake_timeout{10'000};
  // How long a parked payload waits before the Router is asked to let it be read into a buffer
  // (StreamedArrivalEvents::resume_arrival's give_up; it keeps one whose sender holds enough of our
  // memory); tests make it long to see a payload stay.
  std::chrono::milliseconds park_limit{2};
  // The TCP congestion control of every connection to a peer (resolve_congestion_control's
  // answer); empty: the kernel's.
  std::string congestion_control;
  // Connections per peer for large messages, the first included (WEFT_SOCKET_NSTREAMS,
  // streams.h): 0 for auto, from the speed of the link to each peer.
  uint32_t streams = 0;
  // Payloads from kZerocopyMinBytes up sent with MSG_ZEROCOPY (WEFT_SOCKET_ZEROCOPY,
  // zerocopy.h): auto on links of 25 Gbit/s and up.
  ZerocopyMode zerocopy = ZerocopyMode::kAuto;
  // Keep sending zero-copy where the kernel copies anyway (tests: loopback always copies).
  bool zerocopy_when_copied = false;
  // How long our dial to a peer waits for the peer's own connection to us, between its hello
  // and its proof, to prove itself (proof_wait.h); 0: from the round-trip time. Tests make it
  // long.
  std::chrono::milliseconds proof_wait{0};
};

class TcpPath final : public Path,
                      public DepartureWatch,
                      public StreamedReceiver,
                      private EpollLoop::Handler {
 public:
  // `events` outlives this path (the Router that owns it).
  TcpPath(const TcpPathOptions& options, StreamedArrivalEvents& events);
  ~TcpPath() override;

  // Where peers reach us ("host:port" with the real port): the first listener's address, and
  // every listener's, in the order of the options.
  util::SocketAddress listen_address() const { return listeners_.addresses().front(); }
  const std::vector<util::SocketAddress>& listen_addresses() const {
    return listeners_.addresses();
  }
  // Every rank's addresses, indexed by rank, each list in the order to try them (not empty);
  // call before any post.
  void set_peer_candidates(std::vector<std::vector<util::SocketAddress>> candidates);
  // set_peer_candidates with one address per rank.
  void set_peer_addresses(std::vector<util::SocketAddress> addresses);
  // Where to read a peer's addresses (in the order to try them) that set_peer_candidates did
  // not give, when it is first needed; called on the posting thread with no lock held, at most
  // once per peer unless two threads need the peer at once. It may throw weft::Error. Call
  // before any post.
  using PeerLookup = std::function<std::vector<util::SocketAddress>(int peer)>;
  void set_peer_lookup(PeerLookup lookup);

  const char* name() const override { return "tcp"; }
  bool reaches(int peer) const override {
    return peer >= 0 && peer < options_.world_size && peer != options_.rank;
  }
  DepartureWatch* departures() override { return this; }
  StreamedReceiver* streamed_receiver() override { return this; }
  // Connects to the peer unless a connection is made already; false while its address cannot
  // be read.
  bool watch(int peer) override;
  // The address a connection of ours reached the peer at; else its address on the host its own
  // connection to us came from; else its candidates ("A or B"); for a peer never looked up,
  // the host its connection to us came from.
  std::string peer_address(int peer) const override;
  void post_send(const RequestPtr& request) override;
  bool cancel_send(Request& request, const std::shared_ptr<const Error>& reason) override;
  bool detach_receive(Request& request, const std::shared_ptr<const Error>& reason) override;
  bool poll(Request* waited_for) override;
  void start_polling(const Request* waited_for) override;
  void stop_polling(const Request* waited_for) override;
  void drop_peer(int peer, const std::shared_ptr<const Error>& why,
                 std::vector<RequestPtr>& victims) override;
  void announce_death(int peer, const std::string& text) override;
  void announce_abort(uint64_t context, const std::string& text) override;
  void parked_message_wanted() override;
  void shutdown(std::chrono::steady_clock::time_point flush_deadline) override;

  // How many connections a large message to `peer` goes on now (1: no stream is ready, or
  // none is wanted).
  uint32_t streams_to(int peer) const;
  // MSG_ZEROCOPY calls made so far, on every connection.
  uint64_t zerocopy_sends() const;
  // Whether our messages to `peer` go on a connection we dialled (false: on the one it dialled,
  // or on none yet).
  bool sends_on_own_dial(int peer) const;
  // Whether our dial to `peer` waits for the peer's own connection to prove itself
  // (proof_wait.h): not started yet, or ready and idle.
  bool holds_dial_to(int peer) const;
  // Whether a connection claiming to be `peer` is between its hello and its proof.
  bool awaits_proof_from(int peer) const;
  // The bytes of staging held by the connections `peer`'s messages may come on.
  std::size_t inbound_buffer_bytes(int peer) const;

 private:
  struct Peer {
    // Set under mutex_, when first needed, and changed at most once more: when both ranks
    // dialled at once, a higher rank whose dial carried no message yet sends on the lower's
    // (hand_over_locked).
    std::atomic<TcpConnection*> sender{nullptr};
    std::vector<TcpConnection*> connections;
    // The Router failed the peer (drop_peer): nothing more is sent to it.
    std::shared_ptr<const Error> failure;  // set once, under mutex_
    std::atomic<bool> failed{false};
    // The first two connections to become ready, set once under mutex_: the peer's messages
    // come on the one it picked to send on, ours or its own (both when both connected at once).
    std::atomic<TcpConnection*> inbound[2] = {};
    // The one of them its messages came on, once one has: a poller reads only that one (the
    // other carries control frames at most, which the loop reads), a system call less per turn.
    std::atomic<TcpConnection*> carrier{nullptr};
    // Threads polling a request with this peer: they read the inbound connection its messages
    // come on, which the loop does not watch meanwhile, nor while it lingers after the last
    // poller left.
    util::Mutex poll_mutex;
    int pollers WEFT_GUARDED_BY(poll_mutex) = 0;
    bool lingering WEFT_GUARDED_BY(poll_mutex) = false;
    std::chrono::steady_clock::time_point polled_until WEFT_GUARDED_BY(poll_mutex);
    // The peer's addresses in the order to try them, set once under mutex_ before `known`.
    std::vector<util::SocketAddress> candidates;
    std::atomic<bool> known{false};
    // Our one outgoing connection's tour of the peer's addresses (mutex_), and the index in
    // candidates of the one whose handshake succeeded (-1: none yet).
    std::optional<CandidateDial> dial;
    std::atomic<int> reached{-1};
    // The index in candidates of the one on the host the peer's own connection to us came from
    // (-1: none, or its addresses were not known when it came), set once under mutex_.
    std::atomic<int> seen_at{-1};
    // --- several streams (streams.h) ---
    // How many connections our large messages to the peer go on, the first included; 0 until
    // decided (once, under mutex_, when the first large message is sent).
    std::atomic<uint32_t> streams_wanted{0};
    // The extra connections we opened to it (index 1 up; 0 unused), each set once, under mutex_.
    std::atomic<TcpConnection*> out_streams[kMaxStripes] = {};
    // Keeps every stream's pieces in the order of their messages' headers.
    util::Mutex stripe_mutex;
    // The extra connections it opened to us (index 1 up), set under mutex_.
    std::atomic<TcpConnection*> in_streams[kMaxStripes] = {};
  };

  // --- peers' addresses (no lock held) ---
  // Makes the peer's addresses known through the lookup; the error when they cannot be.
  std::shared_ptr<const Error> learn_address_of(int peer);

  // --- connections (mutex_ held) ---
  TcpConnection* sender_for_locked(int peer) WEFT_REQUIRES(mutex_);
  // Our dial to the peer: connecting now, or `deferred` while the peer's own connection to us
  // proves itself (proof_wait.h).
  TcpConnection* connect_locked(int peer, bool deferred = false) WEFT_REQUIRES(mutex_);
  // Starts the connect of a dial made by connect_locked: before any other thread knows it, or,
  // deferred, with its send_mutex held (nothing reads a dial that has no socket yet).
  void start_dial_locked(TcpConnection* connection) WEFT_REQUIRES(mutex_);
  // A socket connecting to `address` (util::connect_started) with our congestion control.
  util::Fd start_connect(const util::SocketAddress& address, int* connect_errno) const;
  // --- the tour of a peer's addresses (event loop, the connection's in_mutex held) ---
  // The current address failed (`outcome`): points the connection at the next one and starts
  // connecting; false when none is left.
  bool dial_next_candidate(TcpConnection* connection, const std::string& outcome)
      WEFT_REQUIRES(connection->in_mutex);
  // No address of the peer could be connected to: it is failed, naming each.
  void fail_unreachable_peer(TcpConnection* connection, const std::string& outcome)
      WEFT_REQUIRES(connection->in_mutex);
  // The handshake succeeded on the current address: it is the peer's from now on.
  void note_reached(TcpConnection* connection) WEFT_REQUIRES(connection->in_mutex);
  // Outgoing connections whose connect outlived their budget (mutex_ held).
  std::vector<TcpConnection*> stale_connects_locked(std::chrono::steady_clock::time_point now)
      WEFT_REQUIRES(mutex_);
  std::string address_of_peer(int peer) const;
  void adopt_locked(std::unique_ptr<TcpConnection> connection) WEFT_REQUIRES(mutex_);
  // Not analysed: write connection->watched and in_epoll, guarded by watch_mutex once the
  // connection is ready (rewatch_locked); before, only the thread that made it or the event loop
  // touches them. The first call adds the fd to the epoll set, later ones change its events.
  void set_epoll_events(TcpConnection* connection, uint32_t events) WEFT_NO_THREAD_SAFETY_ANALYSIS;
  void remove_from_epoll(TcpConnection* connection) WEFT_NO_THREAD_SAFETY_ANALYSIS;
  // Gives epoll what a ready connection needs now (watch_mutex held).
  void rewatch_locked(TcpConnection* connection) WEFT_REQUIRES(connection->watch_mutex);

  // --- several streams (streams.h) ---
  // The connections ready for a large message to `peer` now, its first `sender` included;
  // decides how many it wants, and opens them, the first time.
  uint32_t streams_ready(int peer, TcpConnection* sender);
  void open_streams_locked(int peer, TcpConnection* sender) WEFT_REQUIRES(mutex_);
  // The index of the peer's first candidate on `host`; -1 when none is (candidates set).
  static int candidate_on_host(const Peer& peer, const std::string& host);
  // Where our extra connections to `peer` go: the address we reached it at, else the candidate
  // on the host its own connection to us comes from (`remote`), else its first.
  util::SocketAddress stream_address_locked(int peer,
                                            const std::optional<util::SocketAddress>& remote) const
      WEFT_REQUIRES(mutex_);
  void post_striped(TcpConnection* first, int peer, const RequestPtr& request, FrameHeader header,
                    uint32_t stripes);
  // An extra connection of ours could not be made (`why`): closed, and large messages go on
  // the streams that could.
  void give_up_stream(TcpConnection* connection, const std::string& why)
      WEFT_REQUIRES(connection->in_mutex);
  // The header of a striped message came on `first` (bound to `message`): its pieces are due
  // on the peer's streams. False when the peer has not opened them: the message fails and the
  // connection is dropped.
  bool announce_pieces(TcpConnection* first, const std::shared_ptr<StripedArrival>& message)
      WEFT_REQUIRES(first->in_mutex);
  // On an incoming stream whose next frame is a piece: whether one is due; if not, the stream
  // is left unread until one is announced.
  bool piece_due_or_wait(TcpConnection* stream) WEFT_REQUIRES(stream->in_mutex);
  bool waits_for_piece(TcpConnection* stream);
  // A piece's header was read on an incoming stream: its payload goes where it is due.
  void begin_piece(TcpConnection* stream) WEFT_REQUIRES(stream->in_mutex);
  // Event loop: reads the streams whose awaited piece was announced.
  void resume_announced_streams();
  // The connection ended: its current piece, and those due, never come.
  void fail_due_pieces(TcpConnection* stream, const std::shared_ptr<const Error>& why)
      WEFT_REQUIRES(stream->in_mutex);
  static bool carries_pieces_to_us(const TcpConnection& connection) {
    return connection.stream > 0 && !connection.outgoing;
  }

  // --- sending ---
  void enqueue(TcpConnection* connection, OutboundFrame&& frame);
  // Writes what the socket takes and watches EPOLLOUT exactly while frames remain (send_mutex).
  void flush_locked(TcpConnection* connection) WEFT_REQUIRES(connection->send_mutex);
  // A connection that may carry payloads of ours (zerocopy.h) asks for zero-copy if the
  // setting and its link say so.
  void choose_zerocopy_locked(TcpConnection* connection) WEFT_REQUIRES(connection->send_mutex);
  // The kernel's notices of zero-copy sends: completes the sends they release; true when there
  // was one.
  bool reap_zerocopy_locked(TcpConnection* connection) WEFT_REQUIRES(connection->send_mutex);
  // --- progress by the waiting thread (try-locks: the event loop may be there already) ---
  void read_ready(TcpConnection* connection);
  void write_queued(TcpConnection* connection);
  void write_every_queue();
  // Our extra connections to the peer (streams.h).
  void write_streams(Peer& peer);
  // The peer's messages come on `connection` (its first data frame).
  void note_carrier(TcpConnection* connection);
  // Whether a thread polling a request with the peer reads `connection`.
  static bool polled(const Peer& peer, const TcpConnection* connection);
  // The loop stops / starts watching a peer's inbound connections for input (poll_mutex held).
  void unwatch_inbound_locked(Peer& peer) WEFT_REQUIRES(peer.poll_mutex);
  void watch_inbound_locked(Peer& peer) WEFT_REQUIRES(peer.poll_mutex);
  // ... every lingering one whose last poller left before `idle_before`.
  void watch_every_lingering(std::chrono::steady_clock::time_point idle_before);
  // The loop ticks every kLingerMs from now until nothing lingers or is parked.
  void tick_loop_fast();
  OutboundFrame control_frame(FrameKind kind, uint64_t context, uint64_t tag,
                              const std::string& text) const;
  void send_control(TcpConnection* connection, FrameKind kind, uint64_t context, uint64_t tag,
                    const std::string& text);
  void broadcast_control(FrameKind kind, uint64_t context, uint64_t tag, const std::string& text,
                         int except_peer);

  // --- event loop (EpollLoop::Handler) ---
  int next_wait_ms() override;
  void on_event(void* tag, uint32_t events) override;
  void after_batch() override;
  // A connection acceptor_ took: watched until its hello names a rank (or it proves a stranger).
  void adopt_incoming(util::Fd fd, const util::SocketAddress& address);
  void on_connection_event(TcpConnection* connection, uint32_t events);
  void on_connected(TcpConnection* connection);
  void on_writable(TcpConnection* connection);
  // Reads what the connection holds on the event loop; a connection that ended is lost.
  void read_on_loop(TcpConnection* connection) WEFT_REQUIRES(connection->in_mutex);
  // Reads and handles everything available; false when the connection ended.
  bool read_available(TcpConnection* connection, std::string* why)
      WEFT_REQUIRES(connection->in_mutex);
  // After read_available, on the event loop: while the connection is in the middle of a large
  // payload, reads on as its bytes come (see the definition). False as read_available.
  bool read_rest_of_large_payload(TcpConnection* connection, std::string* why)
      WEFT_REQUIRES(connection->in_mutex);
  // The handshake (handshake.h): parse_handshake handles the next message of the connection's
  // state; true when it handled one and the connection lives on.
  bool parse_handshake(TcpConnection* connection) WEFT_REQUIRES(connection->in_mutex);
  bool on_hello(TcpConnection* connection, const uint8_t* bytes, std::size_t size)
      WEFT_REQUIRES(connection->in_mutex);
  bool on_proof(TcpConnection* connection, const uint8_t* bytes, std::size_t size)
      WEFT_REQUIRES(connection->in_mutex);
  bool on_challenge(TcpConnection* connection, const uint8_t* bytes, std::size_t size)
      WEFT_REQUIRES(connection->in_mutex);
  bool on_ack(TcpConnection* connection, const uint8_t* bytes, std::size_t size)
      WEFT_REQUIRES(connection->in_mutex);
  bool send_handshake(TcpConnection* connection, const std::vector<uint8_t>& message);
  // An incoming connection whose proof is valid becomes its rank's (peers_[...].connections,
  // its sender or one of its streams).
  void adopt_as_peers(TcpConnection* connection) WEFT_REQUIRES(connection->in_mutex);
  // Peer::seen_at from the peer's own connection to us.
  void note_seen_at_locked(Peer& peer, const TcpConnection& connection) WEFT_REQUIRES(mutex_);
  // Our dial `ours` gives its queue and its role as sender to `theirs`, the peer's connection
  // to us (adopt_as_peers says when), unless ours carried a message already.
  void hand_over_locked(Peer& peer, TcpConnection* ours, TcpConnection* theirs)
      WEFT_REQUIRES(mutex_);
  // Whether `connection`, our dial that just passed its handshake, should stay idle for the
  // lower rank's own connection, now between its hello and its proof (proof_wait.h).
  bool should_hold_locked(const TcpConnection* connection) const WEFT_REQUIRES(mutex_);
  // Whether a connection claiming `peer` is between its hello and its proof, which is due after
  // `now`.
  bool peer_proving_locked(int peer, std::chrono::steady_clock::time_point now) const
      WEFT_REQUIRES(mutex_);
  // A held dial stops waiting (`why` for the log): a deferred one starts connecting, a ready one
  // writes.
  void release_held_locked(TcpConnection* connection, const char* why)
      WEFT_REQUIRES(mutex_, connection->send_mutex);
  // Releases the held dials whose peer's connection proved, failed, or is overdue; every one at
  // time_point::max().
  void release_due_holds(std::chrono::steady_clock::time_point now);
  // Whether `connection` is our dial that handed over (no failure of it fails the peer).
  static bool handed_over(TcpConnection* connection);
  // Whether our dial sent its proof: the peer may have taken it for ours since.
  static bool sent_proof(const TcpConnection& dial) {
    ConnectionState state = dial.state;
    return state != ConnectionState::kDeferred && state != ConnectionState::kConnecting &&
           state != ConnectionState::kAwaitChallenge;
  }
  // A dial that handed over failed (`why`): closed, quietly.
  void retire_handed_over(TcpConnection* connection, const std::string& why)
      WEFT_REQUIRES(connection->in_mutex);
  void refuse_incoming(TcpConnection* connection, const std::string& why)
      WEFT_REQUIRES(connection->in_mutex);
  void fail_outgoing_handshake(TcpConnection* connection, ErrorCode code, const std::string& why)
      WEFT_REQUIRES(connection->in_mutex);
  // cancel_send of a striped send: whether it was withdrawn (false: the kernel still reads its
  // buffer); nothing when no piece of it is queued.
  std::optional<bool> cancel_striped(Request& request, const std::shared_ptr<const Error>& reason);
  // detach_receive of a receive a striped message is filling, among `candidates`.
  bool detach_striped(Request& request, const std::shared_ptr<const Error>& reason,
                      const std::vector<TcpConnection*>& candidates);
  void parse_frames(TcpConnection* connection) WEFT_REQUIRES(connection->in_mutex);
  void begin_frame(TcpConnection* connection) WEFT_REQUIRES(connection->in_mutex);
  // Points the frame's payload where the Router said (begin_frame, resume_parked).
  void take_arrival(TcpConnection* connection, Arrival& arrival)
      WEFT_REQUIRES(connection->in_mutex);
  // --- payloads parked in the socket (StreamedArrivalEvents::begin_arrival) ---
  // Leaves the current payload, and everything behind it, unread for now.
  void park(TcpConnection* connection, UnexpectedMessage* message)
      WEFT_REQUIRES(connection->in_mutex);
  // Asks the Router where the parked payload goes now (`give_up`: it waited park_limit) and
  // reads what is staged of it; false while it stays parked or when the connection was dropped.
  bool resume_parked(TcpConnection* connection, bool give_up) WEFT_REQUIRES(connection->in_mutex);
  // Event loop: resumes the parked payloads that are wanted or have waited park_limit.
  void resume_parked_connections(std::chrono::steady_clock::time_point now);
  // The connection ended (`why`): the receive its payload was going to fails, and an
  // unfinished unexpected message, or a parked one, never completes (a receive that claimed it
  // fails).
  void fail_inbound(TcpConnection* connection, const std::shared_ptr<const Error>& why)
      WEFT_REQUIRES(connection->in_mutex);
  // Why a header cannot be from a weft rank on this connection; empty when it can.
  std::string what_is_wrong_with(const TcpConnection* connection, const FrameHeader& header) const;
  void drop_broken_stream(TcpConnection* connection, const std::string& what)
      WEFT_REQUIRES(connection->in_mutex);
  void finish_frame(TcpConnection* connection) WEFT_REQUIRES(connection->in_mutex);
  void handle_control(TcpConnection* connection) WEFT_REQUIRES(connection->in_mutex);
  void became_ready(TcpConnection* connection) WEFT_REQUIRES(connection->in_mutex);
  void close_connection(TcpConnection* connection) WEFT_REQUIRES(connection->in_mutex);
  // A connection that has not become a rank's (nothing but connections_ refers to it).
  static bool is_stranger(const TcpConnection& connection);
  void destroy_closed_strangers();
  void on_connection_lost(TcpConnection* connection, const std::string& why)
      WEFT_REQUIRES(connection->in_mutex);
  // Reads the peer's other connections; one that ended too fails what it carried with `why`.
  void drain_siblings(TcpConnection* lost, const std::shared_ptr<const Error>& why);
  // Why operations with the peer of a connection that ended (`why`) fail.
  std::shared_ptr<const Error> connection_lost_error(const TcpConnection& connection, bool graceful,
                                                     const std::string& why) const;
  void drop_stale_handshakes();

  // --- failure ---
  std::shared_ptr<const Error> peer_error(int peer, ErrorCode code, const std::string& what) const;

  TcpPathOptions options_;
  StreamedArrivalEvents& events_;
  EpollLoop event_loop_;
  TcpListeners listeners_;
  // What listeners_ hands each connection it accepts to.
  const TcpListeners::Take adopt_incoming_ = [this](util::Fd fd, const util::SocketAddress& from) {
    adopt_incoming(std::move(fd), from);
  };
  PeerLookup peer_lookup_;  // set before any post

  // Guards what follows it, and the Peer fields said to be set under it (a nested struct's
  // members cannot name it in an annotation).
  mutable util::Mutex mutex_;
  // One per rank, made by the constructor and never resized: read without the lock.
  std::vector<std::unique_ptr<Peer>> peers_;
  // Every connection made, but strangers' once closed (destroy_closed_strangers).
  std::vector<std::unique_ptr<TcpConnection>> connections_ WEFT_GUARDED_BY(mutex_);
  bool shutting_down_ WEFT_GUARDED_BY(mutex_) = false;

  std::chrono::steady_clock::time_point last_handshake_sweep_;  // event loop only
  std::atomic<bool> strangers_closed_{false};                   // destroy_closed_strangers has work
  // Anyone who reaches the port can be refused: a flood of them must not flood the log.
  util::WarningLimiter refusals_{util::Subsys::kTransport, std::chrono::seconds(5)};
  std::atomic<int> writers_waiting_{0};       // connections whose queue waits for EPOLLOUT
  std::atomic<int> lingering_{0};             // connections unwatched with nobody polling them
  std::atomic<int> parked_count_{0};          // connections holding a parked payload
  std::atomic<int> streams_announced_{0};     // streams whose awaited piece was announced
  std::atomic<int> held_dials_{0};            // dials waiting for a peer's proof
  std::atomic<bool> loop_ticks_fast_{false};  // the loop wakes every kLingerMs
  bool loop_fast_this_turn_ = false;          // event loop only: loop_ticks_fast_ at the wait
  // Bytes this thread read or wrote, in any unit that grows: poll() says whether it moved any.
  static inline thread_local uint64_t bytes_moved_here_ = 0;
};

}  // namespace weft::transport
