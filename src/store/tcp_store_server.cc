#include "weft/tcp_store_server.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <optional>
#include <thread>
#include <unordered_map>
#include <variant>

#include "store/command_runner.h"
#include "store/server_connection.h"
#include "store/store_auth.h"
#include "store/store_protocol.h"
#include "util/acceptor.h"
#include "util/hmac.h"
#include "util/log.h"
#include "util/settings.h"
#include "util/socket.h"
#include "util/warning_limiter.h"
#include "weft/error.h"

namespace weft {

using store::CommandRunner;
using store::Parked;
using store::Reply;
using Client = store::ServerConnection;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kReadChunk = 64 * 1024;
// Fairness. In one turn of the event loop a client gets at most this many requests served,
// this many request bytes (at least one request) and this many bytes read; one with more waits
// in the backlog for the next turn, after every other client's events, so a client that floods
// requests delays the others by one of its turns, not by its whole flood.
constexpr int kRequestsPerTurn = 64;
constexpr std::size_t kRequestBytesPerTurn = 1u << 20;
constexpr std::size_t kReadBytesPerTurn = 256 * 1024;
// Warnings about strangers (refused, stalled connections) are logged at most this often.
constexpr std::chrono::seconds kWarningInterval{5};
// The body of the larger of kAuthHello and kAuthProof: the command and 32 bytes.
constexpr std::size_t kLargestAuthRequest = 1 + std::max(util::kNonceBytes, util::kDigestBytes);
constexpr uint64_t kListenTag = 0;
constexpr uint64_t kWakeTag = 1;

std::size_t max_clients_of(const TcpStoreServer::Options& options) {
  int64_t value =
      options.max_clients ? *options.max_clients : util::setting_int("WEFT_STORE_MAX_CLIENTS");
  if (value < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(options.max_clients ? "TcpStoreServer::Options::max_clients"
                                                : "WEFT_STORE_MAX_CLIENTS") +
                    " must be at least 1, not " + std::to_string(value));
  }
  return static_cast<std::size_t>(value);
}

std::chrono::milliseconds stall_timeout_of(const TcpStoreServer::Options& options) {
  auto value = options.stall_timeout ? *options.stall_timeout
                                     : util::setting_duration("WEFT_STORE_STALL_TIMEOUT");
  if (value.count() <= 0) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(options.stall_timeout ? "TcpStoreServer::Options::stall_timeout"
                                                  : "WEFT_STORE_STALL_TIMEOUT") +
                    " must be positive, not " + std::to_string(value.count()) + " ms");
  }
  return value;
}

}  // namespace

class TcpStoreServer::Loop {
 public:
  explicit Loop(const Options& options)
      : max_frame_(options.max_frame_bytes),
        max_clients_(max_clients_of(options)),
        stall_timeout_(stall_timeout_of(options)),
        job_token_(store::auth_token(options.job_token)),
        runner_(options.max_frame_bytes) {
    if (options.listen_fd >= 0) {
      listen_.reset(options.listen_fd);
      util::set_non_blocking(listen_.get());
    } else {
      listen_ = listen_any(options.host, options.port);
    }
    port_ = util::local_address_of(listen_.get()).port();
    wake_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!epoll_.valid() || !wake_.valid()) util::throw_system_error("epoll/eventfd", errno);
    acceptor_.add(listen_.get(), epoll_data_t{.u64 = kListenTag});
    watch(wake_.get(), kWakeTag, EPOLLIN);
    thread_ = std::thread([this] { run(); });
  }

  ~Loop() {
    stop_.store(true);
    uint64_t one = 1;
    ssize_t ignored = ::write(wake_.get(), &one, sizeof one);
    (void)ignored;
    thread_.join();
  }

  int port() const { return port_; }
  int num_clients() const { return num_clients_.load(); }

 private:
  static util::Fd listen_any(const std::string& host, int port) {
    if (host.empty()) {
      // Dual-stack wildcard first, so IPv6 and IPv4 clients both reach us.
      try {
        util::SocketAddress any6 = util::resolve("::", port);
        return util::listen_on(any6, true);
      } catch (const Error&) {
      }
      return util::listen_on(util::resolve("0.0.0.0", port), true);
    }
    return util::listen_on(util::resolve(host, port), true);
  }

  void watch(int fd, uint64_t tag, uint32_t events, int op = EPOLL_CTL_ADD) {
    epoll_event event{};
    event.events = events;
    event.data.u64 = tag;
    if (epoll_ctl(epoll_.get(), op, fd, &event) != 0) util::throw_system_error("epoll_ctl", errno);
  }

  void run() {
    epoll_event events[64];
    while (!stop_.load()) {
      int n = epoll_wait(epoll_.get(), events, 64, next_timeout_ms());
      if (n < 0 && errno != EINTR) {
        util::log_error(util::Subsys::kStore, [&, saved_errno = errno] {
          return "store server: epoll_wait: " + std::string(strerror(saved_errno));
        });
        break;
      }
      try {
        turn(events, n);
      } catch (const std::bad_alloc&) {
        // Each client's own allocations are caught where they fail it alone; this is the
        // loop's bookkeeping, which fails no client: the next turn tries again.
        waking_ = false;
        util::log_error(util::Subsys::kStore,
                        [] { return std::string("store server: out of memory in a turn"); });
      }
    }
    clients_.clear();
    num_clients_.store(0);
  }

  void turn(const epoll_event* events, int n) {
    for (int i = 0; i < n; ++i) {
      uint64_t tag = events[i].data.u64;
      if (tag == kListenTag)
        acceptor_.accept_all(listen_.get(), [this](util::Fd fd, const util::SocketAddress& from) {
          take(std::move(fd), from);
        });
      else if (tag == kWakeTag)
        continue;
      else
        on_client_event(static_cast<int>(tag), events[i].events);
    }
    serve_backlog();
    drop_gone();
    if (Clock::now() >= next_check_) {
      check_timers();
      drop_gone();
    }
    acceptor_.resume_when_due();
  }

  int next_timeout_ms() const {
    if (!backlog_.empty()) return 0;
    auto nearest =
        std::min(next_check_, acceptor_.paused_until().value_or(Clock::time_point::max()));
    if (nearest == Clock::time_point::max()) return -1;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(nearest - Clock::now());
    return static_cast<int>(std::clamp<int64_t>(left.count() + 1, 0, 60'000));
  }

  void check_soon(Clock::time_point when) { next_check_ = std::min(next_check_, when); }

  // --- connections -----------------------------------------------------------------------

  void take(util::Fd fd, const util::SocketAddress& from) {
    if (clients_.size() - gone_.size() >= max_clients_)
      return refuse(std::move(fd), from.to_string());
    admit(std::move(fd), from.to_string());
  }

  void admit(util::Fd fd, const std::string& peer) {
    util::set_no_delay(fd.get());
    auto now = Clock::now();
    auto client = std::make_unique<Client>();
    client->peer = peer;
    client->accepted_at = client->input_at = client->output_at = now;
    client->watched = EPOLLIN | EPOLLRDHUP;
    client->authenticated = job_token_.empty();
    clients_.reserve(clients_.size() + 1);  // so that nothing throws once epoll watches it
    watch(fd.get(), static_cast<uint64_t>(fd.get()), client->watched);
    client->fd = std::move(fd);
    int key = client->fd.get();
    clients_.emplace(key, std::move(client));
    num_clients_.fetch_add(1);
    check_soon(now + stall_timeout_);
  }

  // Over the cap: the connection gets an error reply and is closed at once. Its first request
  // may be in flight: what has arrived is read first, so that the close is an orderly one
  // (a close with unread input resets the connection, and the client could lose the reply).
  void refuse(util::Fd fd, const std::string& peer) {
    std::string message = "already serving its limit of " + std::to_string(max_clients_) +
                          " clients (WEFT_STORE_MAX_CLIENTS)";
    Reply reply = CommandRunner::error(message);
    uint32_t length = static_cast<uint32_t>(reply.body.size() + 1);
    std::vector<uint8_t> framed(store::kFrameHeaderBytes);
    std::memcpy(framed.data(), &length, sizeof length);
    framed.push_back(static_cast<uint8_t>(reply.status));
    framed.insert(framed.end(), reply.body.begin(), reply.body.end());
    ssize_t sent = ::send(fd.get(), framed.data(), framed.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)sent;
    uint8_t chunk[4096];
    for (int i = 0; i < 16 && ::recv(fd.get(), chunk, sizeof chunk, MSG_DONTWAIT) > 0; ++i) {
    }
    refusals_.warn(
        [&] { return "store server: refused a connection from " + peer + ": " + message; });
  }

  // Clients are marked during a turn and dropped at its end, so that nothing a turn is still
  // using (a wake's list of parked clients, a request being served) disappears under it.
  void mark_gone(Client& client) {
    if (client.gone) return;
    client.gone = true;
    gone_.push_back(client.fd.get());
  }

  void drop_gone() {
    for (int fd : gone_) {
      auto it = clients_.find(fd);
      if (it == clients_.end()) continue;
      epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
      clients_.erase(it);
      num_clients_.fetch_sub(1);
    }
    gone_.clear();
  }

  void on_client_event(int fd, uint32_t events) {
    auto it = clients_.find(fd);
    if (it == clients_.end() || it->second->gone) return;
    Client& client = *it->second;
    // The client closed (or half-closed: weft's clients never do) or its connection broke.
    if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) return mark_gone(client);
    if (events & EPOLLOUT) flush(client);
    if (!client.gone && (events & EPOLLIN)) read_some(client);
    if (!client.gone && !client.queued) serve(client);
  }

  // --- input -------------------------------------------------------------------------------

  void read_some(Client& client) {
    std::size_t budget = kReadBytesPerTurn;
    while (budget > 0) {
      std::size_t room = client.input_room(frame_limit(client));
      if (room == 0) break;
      ssize_t n =
          ::recv(client.fd.get(), read_buffer_, std::min({sizeof read_buffer_, room, budget}), 0);
      if (n > 0) {
        try {
          client.in.append(read_buffer_, static_cast<std::size_t>(n));
        } catch (const std::bad_alloc&) {
          client_faults_.warn([&] {
            return "store server: out of memory for the requests of client " + client.peer +
                   "; closing its connection";
          });
          return mark_gone(client);
        }
        client.input_at = Clock::now();
        budget -= static_cast<std::size_t>(n);
        continue;
      }
      if (n == 0) return mark_gone(client);
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      return mark_gone(client);
    }
    if (!client.in.empty() && !client.request_ready(frame_limit(client)))
      check_soon(client.input_at + stall_timeout_);
    update_watch(client);
  }

  // Watches for input while there is room for it and for output while replies wait for room.
  void update_watch(Client& client) {
    uint32_t events = EPOLLRDHUP;
    if (client.input_room(frame_limit(client)) > 0) events |= EPOLLIN;
    if (!client.out.empty()) events |= EPOLLOUT;
    if (events == client.watched) return;
    watch(client.fd.get(), static_cast<uint64_t>(client.fd.get()), events, EPOLL_CTL_MOD);
    client.watched = events;
  }

  // --- requests ------------------------------------------------------------------------------

  // Serves this client's complete requests, in order, within its share of the turn.
  void serve(Client& client) {
    int requests = 0;
    std::size_t bytes = 0;
    while (!client.gone && !client.parked && !client.close_after_write &&
           client.request_ready(frame_limit(client))) {
      if (client.out.size() > store::kOutputHighWater) {
        flush(client);  // room for more replies now, or EPOLLOUT brings this client back
        if (client.gone || client.out.size() > store::kOutputHighWater) break;
      }
      if (requests >= kRequestsPerTurn || bytes >= kRequestBytesPerTurn) {
        if (!client.queued) {
          client.queued = true;
          backlog_.push_back(client.fd.get());
        }
        break;
      }
      uint32_t length = client.next_length();
      if (length > frame_limit(client) && !client.authenticated) {
        close_unauthenticated(client, "it announced a request of " + std::to_string(length) +
                                          " bytes before authenticating");
        break;
      }
      if (length > max_frame_) {
        client_faults_.warn([&] {
          return "store server: client " + client.peer + " announced a frame of " +
                 std::to_string(length) + " bytes (limit " + std::to_string(max_frame_) +
                 "); refused";
        });
        send_reply(client, CommandRunner::error("frame of " + std::to_string(length) +
                                                " bytes exceeds the store's limit of " +
                                                std::to_string(max_frame_) + " bytes"));
        client.close_after_write = true;
        break;
      }
      client.served_any = true;
      // The body is read in place: nothing appends to this client's input while it is served
      // (a wake it causes serves only parked clients, and this one is not parked).
      const uint8_t* body = client.in.data() + store::kFrameHeaderBytes;
      if (client.authenticated)
        handle(client, body, length);
      else
        authenticate(client, body, length);
      client.in.consume(store::kFrameHeaderBytes + length);
      ++requests;
      bytes += store::kFrameHeaderBytes + length;
    }
    if (client.gone) return;
    // What is left may be the start of a request, sent with the last whole one: it must go on.
    if (!client.in.empty() && !client.request_ready(frame_limit(client))) {
      check_soon(client.input_at + stall_timeout_);
    }
    flush(client);
    if (!client.gone) update_watch(client);
  }

  // What one request of this client may hold: a stranger's are the authentication's, so that
  // the server buffers no more than that for a connection that has not authenticated.
  std::size_t frame_limit(const Client& client) const {
    return client.authenticated ? max_frame_ : kLargestAuthRequest;
  }

  // A client of a store with a token: its kAuthHello, then its kAuthProof (store_auth.h).
  // Anything else, or a wrong proof, gets no reply: the connection is closed.
  void authenticate(Client& client, const uint8_t* body, std::size_t size) {
    auto command = size > 0 ? static_cast<store::Command>(body[0]) : store::Command{};
    if (!client.auth && command == store::Command::kAuthHello && size == 1 + util::kNonceBytes) {
      Client::AuthExchange exchange;
      std::memcpy(exchange.client_nonce.data(), body + 1, util::kNonceBytes);
      exchange.server_nonce = util::fresh_nonce();
      util::Digest proof = store::auth_mac(job_token_, store::AuthSide::kServer,
                                           exchange.client_nonce, exchange.server_nonce);
      Reply reply;
      util::ByteWriter out(reply.body);
      out.put_bytes(exchange.server_nonce.data(), exchange.server_nonce.size());
      out.put_bytes(proof.data(), proof.size());
      client.auth = exchange;
      return send_reply(client, reply);
    }
    if (client.auth && command == store::Command::kAuthProof && size == 1 + util::kDigestBytes) {
      util::Digest proof;
      std::memcpy(proof.data(), body + 1, proof.size());
      util::Digest expected = store::auth_mac(job_token_, store::AuthSide::kClient,
                                              client.auth->client_nonce, client.auth->server_nonce);
      if (util::same_digest(proof, expected)) {
        client.authenticated = true;
        client.auth.reset();
        return send_reply(client, Reply{});
      }
      return close_unauthenticated(client, "its proof of the job token was wrong");
    }
    close_unauthenticated(client, client.auth ? "it sent something else than its proof"
                                              : "it sent a request before authenticating");
  }

  void close_unauthenticated(Client& client, const std::string& why) {
    strangers_.warn([&] {
      return "store server: closed the connection from " + client.peer + ": " + why +
             " (this store requires the job token, WEFT_JOB_TOKEN)";
    });
    mark_gone(client);
  }

  void serve_backlog() {
    std::vector<int> turn;
    turn.swap(backlog_);
    for (int fd : turn) {
      auto it = clients_.find(fd);
      if (it == clients_.end()) continue;
      it->second->queued = false;
      if (!it->second->gone) serve(*it->second);
    }
  }

  void handle(Client& client, const uint8_t* body, std::size_t size) {
    auto outcome = runner_.run(body, size);
    if (auto* parked = std::get_if<Parked>(&outcome)) {
      check_soon(parked->deadline);
      client.parked = std::move(*parked);
    } else {
      send_reply(client, std::get<Reply>(outcome));
    }
    if (!waking_ && runner_.take_mutated()) wake_parked();
  }

  // Resumes the clients whose keys are all present. Resuming one serves its pipelined
  // requests, which may change the table again: that is one more round of this loop, never a
  // wake from inside a wake (whose list of ready clients would be stale by then).
  // NOTE(store-wake-index): each round looks at every client; an index from key to the
  // clients parked on it would make a set cost what it wakes, for jobs of very many ranks.
  void wake_parked() {
    waking_ = true;
    do {
      std::vector<int> ready;
      for (auto& [fd, client] : clients_) {
        if (client->parked && !client->gone && runner_.ready(*client->parked)) ready.push_back(fd);
      }
      for (int fd : ready) resume(fd, /*timed_out=*/false);
    } while (runner_.take_mutated());
    waking_ = false;
  }

  void resume(int fd, bool timed_out) {
    auto it = clients_.find(fd);
    if (it == clients_.end() || it->second->gone) return;
    Client& client = *it->second;
    // Resumed already, or parked anew on keys still missing, since the caller's list was made.
    if (!client.parked) return;
    if (timed_out ? client.parked->deadline > Clock::now() : !runner_.ready(*client.parked)) {
      return;
    }
    Parked parked = std::move(*client.parked);
    client.parked.reset();
    send_reply(client, timed_out ? runner_.timed_out(parked) : runner_.answer(parked));
    serve(client);
  }

  // --- output ------------------------------------------------------------------------------

  // Queues a reply; serve() sends it, with the others of the client's turn.
  void send_reply(Client& client, const Reply& reply) {
    uint32_t length = static_cast<uint32_t>(reply.body.size() + 1);
    auto status = static_cast<uint8_t>(reply.status);
    try {
      client.out.append(&length, sizeof length);
      client.out.append(&status, 1);
      client.out.append(reply.body.data(), reply.body.size());
    } catch (const std::bad_alloc&) {
      client_faults_.warn([&] {
        return "store server: out of memory for the replies to client " + client.peer +
               "; closing its connection";
      });
      mark_gone(client);
    }
  }

  // Sends what the socket takes; watches for room for the rest.
  void flush(Client& client) {
    while (!client.out.empty()) {
      ssize_t n = ::send(client.fd.get(), client.out.data(), client.out.size(), MSG_NOSIGNAL);
      if (n > 0) {
        client.out.consume(static_cast<std::size_t>(n));
        client.output_at = Clock::now();
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!(client.watched & EPOLLOUT)) client.output_at = Clock::now();
        check_soon(client.output_at + stall_timeout_);
        update_watch(client);
        return;
      }
      return mark_gone(client);
    }
    if (client.close_after_write) return mark_gone(client);
    update_watch(client);
  }

  // --- deadlines -----------------------------------------------------------------------------

  // Answers parked requests whose timeout passed, closes stalled connections, and finds when
  // to look again. Runs only when something may be due: it visits every client.
  void check_timers() {
    auto now = Clock::now();
    next_check_ = Clock::time_point::max();
    std::vector<int> expired, stalled;
    for (auto& [fd, client] : clients_) {
      if (client->gone) continue;
      if (client->parked) {
        if (client->parked->deadline <= now)
          expired.push_back(fd);
        else
          check_soon(client->parked->deadline);
      }
      if (auto deadline = client->stall_deadline(frame_limit(*client), stall_timeout_)) {
        if (*deadline <= now)
          stalled.push_back(fd);
        else
          check_soon(*deadline);
      }
    }
    for (int fd : expired) resume(fd, /*timed_out=*/true);
    for (int fd : stalled) close_if_stalled(fd);
  }

  void close_if_stalled(int fd) {
    auto it = clients_.find(fd);
    if (it == clients_.end() || it->second->gone) return;
    Client& client = *it->second;
    // A last look first: a loop busy with many clients may not have seen its bytes or room yet.
    flush(client);
    if (!client.gone) read_some(client);
    if (!client.gone && !client.queued) serve(client);
    if (client.gone) return;
    auto deadline = client.stall_deadline(frame_limit(client), stall_timeout_);
    if (!deadline) return;
    if (*deadline > Clock::now()) return check_soon(*deadline);
    stalls_.warn([&] {
      std::string why;
      if (!client.out.empty()) {
        why = "left " + std::to_string(client.out.size()) + " bytes of replies unread";
      } else if (!client.in.empty()) {
        why = "sent " + std::to_string(client.in.size()) + " bytes of a request and then nothing";
      } else if (!client.authenticated) {
        why = "did not authenticate after connecting";
      } else {
        why = "sent no request after connecting";
      }
      return "store server: closed the connection from " + client.peer + ": it " + why + " for " +
             std::to_string(stall_timeout_.count()) + " ms (WEFT_STORE_STALL_TIMEOUT)";
    });
    mark_gone(client);
  }

  std::size_t max_frame_;
  std::size_t max_clients_;
  std::chrono::milliseconds stall_timeout_;
  std::string job_token_;  // empty: an open store (no job token)
  CommandRunner runner_;
  util::Fd listen_;
  util::Fd epoll_{epoll_create1(EPOLL_CLOEXEC)};
  util::Acceptor acceptor_{epoll_.get(), util::Subsys::kStore, "store server"};
  util::Fd wake_;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> num_clients_{0};
  std::unordered_map<int, std::unique_ptr<Client>> clients_;
  std::vector<int> backlog_;  // clients with requests left after their turn, in arrival order
  std::vector<int> gone_;     // clients marked gone this turn
  bool waking_ = false;       // inside wake_parked: a change is one more round, not a nested wake
  Clock::time_point next_check_ = Clock::time_point::max();  // when check_timers may have work
  util::WarningLimiter refusals_{util::Subsys::kStore, kWarningInterval};
  util::WarningLimiter stalls_{util::Subsys::kStore, kWarningInterval};
  util::WarningLimiter strangers_{util::Subsys::kStore, kWarningInterval};
  util::WarningLimiter client_faults_{util::Subsys::kStore, kWarningInterval};  // any client's
  uint8_t read_buffer_[kReadChunk];
  std::thread thread_;
};

TcpStoreServer::TcpStoreServer(const Options& options) : loop_(std::make_unique<Loop>(options)) {}
TcpStoreServer::~TcpStoreServer() = default;
int TcpStoreServer::port() const { return loop_->port(); }
int TcpStoreServer::num_clients() const { return loop_->num_clients(); }

}  // namespace weft
