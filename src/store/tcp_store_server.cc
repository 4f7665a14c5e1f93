#include "weft/tcp_store_server.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <optional>
#include <thread>
#include <unordered_map>

#include "store/key_value_table.h"
#include "store/store_protocol.h"
#include "util/log.h"
#include "util/socket.h"
#include "weft/error.h"

namespace weft {

using store::Command;
using store::Status;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kReadChunk = 64 * 1024;
// When the process is out of file descriptors, the listener is left alone this long: it stays
// readable with the connection it cannot accept, and watching it would spin the loop.
constexpr std::chrono::milliseconds kAcceptPause{100};
// A client's next request is served only once its unsent replies are below this: a client
// that pipelines requests and never reads holds at most this plus one reply.
constexpr std::size_t kOutputHighWater = 1u << 20;
constexpr uint64_t kListenTag = 0;
constexpr uint64_t kWakeTag = 1;

struct Reply {
  Status status = Status::kOk;
  std::vector<uint8_t> body;  // after the status byte
};

// A request waiting for keys to appear.
struct Parked {
  Command command;
  std::vector<std::string> keys;
  Clock::time_point deadline;
};

struct Client {
  util::Fd fd;
  std::string peer;
  std::vector<uint8_t> in;
  std::vector<uint8_t> out;
  std::size_t out_sent = 0;
  std::optional<Parked> parked;
  bool close_after_write = false;
  bool out_armed = false;  // EPOLLOUT is being watched
};

}  // namespace

class TcpStoreServer::Loop {
 public:
  explicit Loop(const Options& options) : max_frame_(options.max_frame_bytes) {
    if (options.listen_fd >= 0) {
      listen_.reset(options.listen_fd);
      util::set_non_blocking(listen_.get());
    } else {
      listen_ = listen_any(options.host, options.port);
    }
    port_ = util::local_address_of(listen_.get()).port();
    epoll_.reset(epoll_create1(EPOLL_CLOEXEC));
    wake_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!epoll_.valid() || !wake_.valid()) util::throw_system_error("epoll/eventfd", errno);
    watch(listen_.get(), kListenTag, EPOLLIN);
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
      for (int i = 0; i < n; ++i) {
        uint64_t tag = events[i].data.u64;
        if (tag == kListenTag)
          accept_all();
        else if (tag == kWakeTag)
          continue;
        else
          on_client_event(static_cast<int>(tag), events[i].events);
      }
      expire_parked();
      resume_accepting_when_due();
    }
    clients_.clear();
    num_clients_.store(0);
  }

  int next_timeout_ms() const {
    auto nearest = accept_paused_until_.value_or(Clock::time_point::max());
    for (const auto& [fd, client] : clients_) {
      if (client->parked) nearest = std::min(nearest, client->parked->deadline);
    }
    if (nearest == Clock::time_point::max()) return -1;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(nearest - Clock::now());
    return static_cast<int>(std::clamp<int64_t>(left.count() + 1, 0, 60'000));
  }

  void accept_all() {
    for (;;) {
      util::SocketAddress address;
      address.length = sizeof address.storage;
      int fd = accept4(listen_.get(), reinterpret_cast<sockaddr*>(&address.storage),
                       &address.length, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          pause_accepting(errno);
        } else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
          util::log_warn(util::Subsys::kStore, [&, saved_errno = errno] {
            return "store server: accept: " + std::string(strerror(saved_errno));
          });
        }
        return;
      }
      util::set_no_delay(fd);
      auto client = std::make_unique<Client>();
      client->fd.reset(fd);
      client->peer = address.to_string();
      watch(fd, static_cast<uint64_t>(fd), EPOLLIN | EPOLLRDHUP);
      clients_[fd] = std::move(client);
      num_clients_.fetch_add(1);
    }
  }

  void pause_accepting(int error) {
    util::log_warn(util::Subsys::kStore, [&] {
      return "store server: cannot accept a connection (" + std::string(strerror(error)) +
             "); accepting again in " + std::to_string(kAcceptPause.count()) + " ms";
    });
    watch(listen_.get(), kListenTag, 0, EPOLL_CTL_MOD);
    accept_paused_until_ = Clock::now() + kAcceptPause;
  }

  void resume_accepting_when_due() {
    if (!accept_paused_until_ || Clock::now() < *accept_paused_until_) return;
    accept_paused_until_.reset();
    watch(listen_.get(), kListenTag, EPOLLIN, EPOLL_CTL_MOD);
  }

  void drop(int fd) {
    auto it = clients_.find(fd);
    if (it == clients_.end()) return;
    epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
    clients_.erase(it);
    num_clients_.fetch_sub(1);
  }

  void on_client_event(int fd, uint32_t events) {
    auto it = clients_.find(fd);
    if (it == clients_.end()) return;
    Client& client = *it->second;
    if (events & EPOLLOUT) {
      if (!flush(client)) return drop(fd);
    }
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
      if (!read_available(client)) return drop(fd);
    }
    serve(client);  // also what waited for its replies to drain
    if (client.close_after_write && client.out_sent == client.out.size()) return drop(fd);
  }

  // False when the client is gone.
  bool read_available(Client& client) {
    uint8_t chunk[kReadChunk];
    for (;;) {
      ssize_t n = ::recv(client.fd.get(), chunk, sizeof chunk, 0);
      if (n > 0) {
        client.in.insert(client.in.end(), chunk, chunk + n);
        // A client that keeps sending while its request is parked gets no more buffer than
        // one frame's worth.
        if (client.in.size() > max_frame_ + kReadChunk + store::kFrameHeaderBytes) {
          util::log_warn(util::Subsys::kStore, [&] {
            return "store server: client " + client.peer +
                   " sent more than one frame ahead; dropping it";
          });
          return false;
        }
        continue;
      }
      if (n == 0) return false;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      if (errno == EINTR) continue;
      return false;
    }
  }

  // Handles every complete frame buffered for this client, in order.
  void serve(Client& client) {
    while (!client.parked && !client.close_after_write &&
           client.out.size() - client.out_sent <= kOutputHighWater) {
      if (client.in.size() < store::kFrameHeaderBytes) return;
      uint32_t length;
      std::memcpy(&length, client.in.data(), sizeof length);
      if (length > max_frame_) {
        util::log_warn(util::Subsys::kStore, [&] {
          return "store server: client " + client.peer + " announced a frame of " +
                 std::to_string(length) + " bytes (limit " + std::to_string(max_frame_) +
                 "); refused";
        });
        send_reply(client, error_reply("frame of " + std::to_string(length) +
                                       " bytes exceeds the store's limit of " +
                                       std::to_string(max_frame_) + " bytes"));
        client.close_after_write = true;
        return;
      }
      if (client.in.size() < store::kFrameHeaderBytes + length) return;
      std::vector<uint8_t> body(client.in.begin() + store::kFrameHeaderBytes,
                                client.in.begin() + store::kFrameHeaderBytes + length);
      client.in.erase(client.in.begin(), client.in.begin() + store::kFrameHeaderBytes + length);
      handle(client, body);
    }
  }

  static Reply error_reply(const std::string& message) {
    Reply reply{Status::kError, {}};
    util::ByteWriter(reply.body).put_string(message);
    return reply;
  }

  void handle(Client& client, const std::vector<uint8_t>& body) {
    std::optional<Reply> reply;
    try {
      util::ByteReader reader(body.data(), body.size());
      reply = execute(client, reader);
      if (reader.remaining() != 0) {
        throw Error(ErrorCode::kInvalidArgument,
                    "malformed request: " + std::to_string(reader.remaining()) +
                        " unexpected trailing bytes");
      }
    } catch (const Error& e) {
      client.parked.reset();
      reply = error_reply(e.message());
    } catch (const std::bad_alloc&) {
      client.parked.reset();
      reply = error_reply("the store server ran out of memory for this request");
    }
    if (reply) send_reply(client, *reply);
    if (mutated_ && !waking_) wake_parked();
  }

  // Runs one request; an empty result means it was parked.
  std::optional<Reply> execute(Client& client, util::ByteReader& reader) {
    Reply ok;
    util::ByteWriter out(ok.body);
    auto command = static_cast<Command>(reader.get<uint8_t>());
    switch (command) {
      case Command::kSet: {
        std::string key = reader.get_string();
        table_.set(key, reader.get_blob());
        mutated_ = true;
        return ok;
      }
      case Command::kAdd: {
        std::string key = reader.get_string();
        out.put<int64_t>(table_.add(key, reader.get<int64_t>()));
        mutated_ = true;
        return ok;
      }
      case Command::kCompareSet: {
        std::string key = reader.get_string();
        Bytes expected = reader.get_blob();
        Bytes desired = reader.get_blob();
        out.put_blob(table_.compare_set(key, expected, desired));
        mutated_ = true;
        return ok;
      }
      case Command::kDelete:
        out.put<uint8_t>(table_.erase(reader.get_string()) ? 1 : 0);
        return ok;
      case Command::kCheck:
        out.put<uint8_t>(table_.contains_all(store::read_keys(reader)) ? 1 : 0);
        return ok;
      case Command::kNumKeys:
        out.put<int64_t>(table_.size());
        return ok;
      case Command::kPing:
        return ok;
      case Command::kMultiSet: {
        uint32_t count = reader.get<uint32_t>();
        if (count > reader.remaining() / 8) {
          throw Error(ErrorCode::kInvalidArgument,
                      "malformed request: " + std::to_string(count) + " pairs announced");
        }
        for (uint32_t i = 0; i < count; ++i) {
          std::string key = reader.get_string();
          table_.set(key, reader.get_blob());
        }
        mutated_ = true;
        return ok;
      }
      case Command::kGet:
      case Command::kWait:
      case Command::kMultiGet: {
        std::vector<std::string> keys;
        if (command == Command::kGet)
          keys.push_back(reader.get_string());
        else
          keys = store::read_keys(reader);
        uint64_t timeout_ms = reader.get<uint64_t>();
        Parked parked{command, std::move(keys),
                      Clock::now() + std::chrono::milliseconds(
                                         std::min<uint64_t>(timeout_ms, 365ull * 86'400'000))};
        if (table_.contains_all(parked.keys)) return answer(parked);
        client.parked = std::move(parked);
        return std::nullopt;
      }
    }
    throw Error(ErrorCode::kInvalidArgument,
                "unknown command " + std::to_string(static_cast<int>(command)));
  }

  Reply answer(const Parked& parked) {
    // A reply is bounded as a request is: a multi_get naming one large key many times would
    // otherwise make the server allocate many times what the client sent.
    std::size_t bytes = 0;
    for (const std::string& key : parked.keys) bytes += table_.find(key)->size() + 4;
    if (parked.command != Command::kWait && bytes > max_frame_) {
      return error_reply("the reply would be " + std::to_string(bytes) +
                         " bytes, over the store's limit of " + std::to_string(max_frame_) +
                         " bytes");
    }
    Reply ok;
    util::ByteWriter out(ok.body);
    if (parked.command == Command::kGet) out.put_blob(*table_.find(parked.keys[0]));
    if (parked.command == Command::kMultiGet) {
      out.put<uint32_t>(static_cast<uint32_t>(parked.keys.size()));
      for (const std::string& key : parked.keys) out.put_blob(*table_.find(key));
    }
    return ok;
  }

  // Resumes the clients whose keys are all present. Resuming one serves its pipelined
  // requests, which may change the table again: that is one more round of this loop, never a
  // wake from inside a wake (whose list of ready clients would be stale by then).
  void wake_parked() {
    waking_ = true;
    while (mutated_) {
      mutated_ = false;
      std::vector<int> ready;
      for (auto& [fd, client] : clients_) {
        if (client->parked && table_.contains_all(client->parked->keys)) ready.push_back(fd);
      }
      for (int fd : ready) resume(fd, /*timed_out=*/false);
    }
    waking_ = false;
  }

  void expire_parked() {
    auto now = Clock::now();
    std::vector<int> expired;
    for (auto& [fd, client] : clients_) {
      if (client->parked && client->parked->deadline <= now) expired.push_back(fd);
    }
    for (int fd : expired) resume(fd, /*timed_out=*/true);
  }

  void resume(int fd, bool timed_out) {
    auto it = clients_.find(fd);
    if (it == clients_.end()) return;
    Client& client = *it->second;
    // Resumed already, or parked anew on keys still missing, since the caller's list was made.
    if (!client.parked) return;
    if (timed_out ? client.parked->deadline > Clock::now()
                  : !table_.contains_all(client.parked->keys)) {
      return;
    }
    Parked parked = std::move(*client.parked);
    client.parked.reset();
    if (timed_out) {
      Reply reply{Status::kTimeout, {}};
      util::ByteWriter(reply.body).put_string(table_.missing(parked.keys));
      send_reply(client, reply);
    } else {
      send_reply(client, answer(parked));
    }
    serve(client);
  }

  void send_reply(Client& client, const Reply& reply) {
    std::vector<uint8_t> body;
    body.reserve(reply.body.size() + 1);
    body.push_back(static_cast<uint8_t>(reply.status));
    body.insert(body.end(), reply.body.begin(), reply.body.end());
    std::vector<uint8_t> framed = store::frame(body);
    client.out.insert(client.out.end(), framed.begin(), framed.end());
    if (!flush(client)) client.close_after_write = true;
  }

  // Writes what it can; arms EPOLLOUT for the rest. False when the client is gone.
  bool flush(Client& client) {
    while (client.out_sent < client.out.size()) {
      ssize_t n = ::send(client.fd.get(), client.out.data() + client.out_sent,
                         client.out.size() - client.out_sent, MSG_NOSIGNAL);
      if (n > 0) {
        client.out_sent += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!client.out_armed) {
          watch(client.fd.get(), static_cast<uint64_t>(client.fd.get()),
                EPOLLIN | EPOLLOUT | EPOLLRDHUP, EPOLL_CTL_MOD);
          client.out_armed = true;
        }
        return true;
      }
      return false;
    }
    client.out.clear();
    client.out_sent = 0;
    if (client.out_armed) {
      watch(client.fd.get(), static_cast<uint64_t>(client.fd.get()), EPOLLIN | EPOLLRDHUP,
            EPOLL_CTL_MOD);
      client.out_armed = false;
    }
    return true;
  }

  std::size_t max_frame_;
  util::Fd listen_;
  util::Fd epoll_;
  util::Fd wake_;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> num_clients_{0};
  std::unordered_map<int, std::unique_ptr<Client>> clients_;
  store::KeyValueTable table_;
  bool mutated_ = false;
  bool waking_ = false;  // inside wake_parked: a change is one more round, not a nested wake
  std::optional<Clock::time_point> accept_paused_until_;  // out of descriptors: see kAcceptPause
  std::thread thread_;
};

TcpStoreServer::TcpStoreServer(const Options& options) : loop_(std::make_unique<Loop>(options)) {}
TcpStoreServer::~TcpStoreServer() = default;
int TcpStoreServer::port() const { return loop_->port(); }
int TcpStoreServer::num_clients() const { return loop_->num_clients(); }

}  // namespace weft
