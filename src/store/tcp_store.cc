#include "weft/tcp_store.h"

#include <algorithm>
#include <cstring>

#include "store/store_auth.h"
#include "store/store_protocol.h"
#include "util/deadline.h"
#include "util/hmac.h"
#include "util/mutex.h"
#include "util/socket.h"
#include "weft/error.h"

namespace weft {

using store::Command;
using store::Status;

Store::Duration TcpStore::answer_bound(Duration timeout) {
  // As long again, within bounds, so that a call with a short timeout also ends soon when the
  // server is out of reach.
  return timeout + std::clamp(timeout, Duration(100), Duration(5000));
}

class TcpStore::Connection {
 public:
  Connection(const std::string& host, int port, Duration connect_timeout,
             const std::string& job_token)
      : address_(util::resolve(host, port)) {
    auto deadline = util::deadline_after(connect_timeout);
    fd_ = util::connect_retrying(address_, deadline);
    if (!fd_.valid()) {
      throw Error(ErrorCode::kTimeout,
                  "no store server answered at " + address_.to_string() + " within " +
                      std::to_string(connect_timeout.count()) + " ms (connection refused)",
                  ErrorContext{.op = "store.connect", .peer_address = address_.to_string()});
    }
    ErrorContext context{.op = "store.connect", .peer_address = address_.to_string()};
    if (!job_token.empty()) authenticate(job_token, deadline, context);
    // A first request at once: the server closes a connection that sends none within its
    // stall timeout, and the answer shows that a store server, not only a listening socket,
    // is there and has room for this client.
    std::vector<uint8_t> reply;
    Status status;
    try {
      status = exchange({static_cast<uint8_t>(Command::kPing)}, deadline, reply);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kPeerFailure && job_token.empty()) {
        throw Error(ErrorCode::kUnauthorized,
                    "the store server at " + address_.to_string() +
                        " closed the connection without answering: it probably requires the "
                        "job token (set WEFT_JOB_TOKEN to the job's token)",
                    context);
      }
      if (e.code() != ErrorCode::kTimeout) throw e.with_context(context);
      throw Error(ErrorCode::kTimeout,
                  "the store server at " + address_.to_string() +
                      " accepted the connection but did not answer within " +
                      std::to_string(connect_timeout.count()) + " ms",
                  context);
    }
    if (status != Status::kOk) {
      util::ByteReader reader(reply.data(), reply.size());
      throw Error(ErrorCode::kSystem,
                  "the store server at " + address_.to_string() +
                      " refused this client: " + reader.get_string(),
                  context);
    }
  }

  // The challenge-response of store_auth.h. The server proves itself first: we send our
  // proof only to a server that knows the token.
  void authenticate(const std::string& token, util::Clock::time_point deadline,
                    const ErrorContext& context) {
    std::string server = "the store server at " + address_.to_string();
    util::Nonce client_nonce = util::fresh_nonce();
    std::vector<uint8_t> reply;
    Status status = exchange_during_authentication(auth_request(Command::kAuthHello, client_nonce),
                                                   deadline, reply, context);
    if (status != Status::kOk) {
      throw Error(ErrorCode::kUnauthorized,
                  server + " does not authenticate its clients (it was started without a job " +
                      "token) but this process has one (WEFT_JOB_TOKEN): refusing to use it",
                  context);
    }
    if (reply.size() != util::kNonceBytes + util::kDigestBytes) {
      throw Error(ErrorCode::kUnauthorized,
                  server + " answered the authentication with something that is not weft's",
                  context);
    }
    util::Nonce server_nonce;
    util::Digest server_proof;
    std::memcpy(server_nonce.data(), reply.data(), server_nonce.size());
    std::memcpy(server_proof.data(), reply.data() + server_nonce.size(), server_proof.size());
    util::Digest expected =
        store::auth_mac(token, store::AuthSide::kServer, client_nonce, server_nonce);
    if (!util::same_digest(server_proof, expected)) {
      throw Error(ErrorCode::kUnauthorized,
                  server +
                      " does not know this job's token (job token mismatch: is it the "
                      "store of another job?)",
                  context);
    }
    util::Digest proof =
        store::auth_mac(token, store::AuthSide::kClient, client_nonce, server_nonce);
    status = exchange_during_authentication(auth_request(Command::kAuthProof, proof), deadline,
                                            reply, context);
    if (status != Status::kOk) {
      throw Error(ErrorCode::kUnauthorized, server + " refused this client's proof", context);
    }
  }

  // kAuthHello's nonce or kAuthProof's digest, after the command.
  static std::vector<uint8_t> auth_request(Command command,
                                           const std::array<uint8_t, util::kDigestBytes>& bytes) {
    std::vector<uint8_t> body(1 + bytes.size());
    body[0] = static_cast<uint8_t>(command);
    std::memcpy(body.data() + 1, bytes.data(), bytes.size());
    return body;
  }

  // A server that refuses our proof closes the connection: that is a refusal, not a death.
  Status exchange_during_authentication(const std::vector<uint8_t>& body,
                                        util::Clock::time_point deadline,
                                        std::vector<uint8_t>& reply, const ErrorContext& context) {
    try {
      return exchange(body, deadline, reply);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kTimeout) {
        throw Error(ErrorCode::kTimeout,
                    "the store server at " + address_.to_string() +
                        " did not finish authenticating this client in time",
                    context);
      }
      if (e.code() != ErrorCode::kPeerFailure) throw e.with_context(context);
      throw Error(ErrorCode::kUnauthorized,
                  "the store server at " + address_.to_string() +
                      " closed the connection while authenticating this client (job token "
                      "mismatch?): " +
                      e.message(),
                  context);
    }
  }

  // Sends one request and returns the OK reply's body; kTimeout / kError replies throw.
  std::vector<uint8_t> call(const std::vector<uint8_t>& body, Duration answer_within,
                            const char* op) {
    ErrorContext context{.op = op, .peer_address = address_.to_string()};
    try {
      // A server that stops reading must not hold the caller past the call's bound either.
      std::vector<uint8_t> reply;
      Status status = exchange(body, util::deadline_after(answer_bound(answer_within)), reply);
      if (status == Status::kOk) return reply;
      util::ByteReader reader(reply.data(), reply.size());
      std::string text = reader.get_string();
      if (status == Status::kTimeout) {
        throw Error(ErrorCode::kTimeout, std::string(op) + ": keys " + text +
                                             " still missing after " +
                                             std::to_string(answer_within.count()) + " ms");
      }
      throw Error(ErrorCode::kInvalidArgument, std::string(op) + " refused by the store: " + text);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kPeerFailure) {
        throw Error(ErrorCode::kPeerFailure,
                    "lost the connection to the store server (" + e.message() + ")", context);
      }
      throw e.with_context(context);
    }
  }

  // Whether a call gave up in the middle of an exchange: the reply it did not read may still
  // come, and would be taken for the next call's.
  bool out_of_step() const { return out_of_step_; }

 private:
  // Sends one request frame and reads the reply's; `reply` gets the body after the status.
  Status exchange(const std::vector<uint8_t>& body, util::Clock::time_point deadline,
                  std::vector<uint8_t>& reply) {
    try {
      std::vector<uint8_t> framed = store::frame(body);
      util::write_all(fd_.get(), framed.data(), framed.size(), deadline);
      uint32_t length = 0;
      util::read_exact(fd_.get(), &length, sizeof length, deadline);
      if (length == 0) throw Error(ErrorCode::kInternal, "empty reply from the store");
      reply.resize(length);
      util::read_exact(fd_.get(), reply.data(), length, deadline);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kTimeout) out_of_step_ = true;
      throw;
    }
    auto status = static_cast<Status>(reply[0]);
    reply.erase(reply.begin());
    return status;
  }

  util::SocketAddress address_;
  util::Fd fd_;
  bool out_of_step_ = false;
};

class TcpStore::IdleConnections {
 public:
  // The most recently given back, or null when there is none.
  std::unique_ptr<Connection> take() WEFT_EXCLUDES(mutex_) {
    util::MutexLock lock(mutex_);
    if (idle_.empty()) return nullptr;
    std::unique_ptr<Connection> connection = std::move(idle_.back());
    idle_.pop_back();
    return connection;
  }
  void give_back(std::unique_ptr<Connection> connection) WEFT_EXCLUDES(mutex_) {
    util::MutexLock lock(mutex_);
    idle_.push_back(std::move(connection));
  }

 private:
  util::Mutex mutex_;
  std::vector<std::unique_ptr<Connection>> idle_ WEFT_GUARDED_BY(mutex_);
};

namespace {

std::vector<uint8_t> request(Command command) { return {static_cast<uint8_t>(command)}; }

uint64_t millis(Store::Duration d) {
  return static_cast<uint64_t>(std::max<int64_t>(0, d.count()));
}

}  // namespace

TcpStore::TcpStore(const std::string& host, int port, Duration connect_timeout)
    : TcpStore(host, port, connect_timeout, store::auth_token(std::nullopt)) {}

TcpStore::TcpStore(const std::string& host, int port, Duration connect_timeout,
                   const std::string& job_token)
    : host_(host), port_(port), job_token_(job_token), idle_(std::make_unique<IdleConnections>()) {
  idle_->give_back(std::make_unique<Connection>(host, port, connect_timeout, job_token));
  timeout_ = connect_timeout;
}

TcpStore::~TcpStore() = default;

std::unique_ptr<TcpStore> TcpStore::clone(Duration connect_timeout) const {
  return std::make_unique<TcpStore>(host_, port_, connect_timeout, job_token_);
}

std::unique_ptr<TcpStore::Connection> TcpStore::take_connection() {
  if (std::unique_ptr<Connection> connection = idle_->take()) return connection;
  // Every connection is in a call of another thread, which may be a wait for keys that lasts:
  // one more connection rather than a wait behind it. Bounded by this call's timeout.
  return std::make_unique<Connection>(host_, port_, timeout(), job_token_);
}

void TcpStore::give_back(std::unique_ptr<Connection> connection) {
  // One that gave up mid-exchange is closed: the answer it did not read may still come.
  if (connection->out_of_step()) return;
  idle_->give_back(std::move(connection));
}

template <typename Call>
auto TcpStore::with_connection(Call&& call) {
  struct Lease {
    TcpStore& store;
    std::unique_ptr<Connection> connection;
    ~Lease() { store.give_back(std::move(connection)); }
  } lease{*this, take_connection()};
  return call(*lease.connection);
}

void TcpStore::set(const std::string& key, const Bytes& value) {
  auto body = request(Command::kSet);
  util::ByteWriter out(body);
  out.put_string(key);
  out.put_blob(value);
  with_connection([&](Connection& c) { return c.call(body, timeout(), "store.set"); });
}

Bytes TcpStore::get(const std::string& key) {
  auto body = request(Command::kGet);
  util::ByteWriter out(body);
  out.put_string(key);
  out.put<uint64_t>(millis(timeout()));
  auto reply = with_connection([&](Connection& c) { return c.call(body, timeout(), "store.get"); });
  util::ByteReader in(reply.data(), reply.size());
  return in.get_blob();
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  auto body = request(Command::kAdd);
  util::ByteWriter out(body);
  out.put_string(key);
  out.put<int64_t>(delta);
  auto reply = with_connection([&](Connection& c) { return c.call(body, timeout(), "store.add"); });
  util::ByteReader in(reply.data(), reply.size());
  return in.get<int64_t>();
}

Bytes TcpStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  auto body = request(Command::kCompareSet);
  util::ByteWriter out(body);
  out.put_string(key);
  out.put_blob(expected);
  out.put_blob(desired);
  auto reply =
      with_connection([&](Connection& c) { return c.call(body, timeout(), "store.compare_set"); });
  util::ByteReader in(reply.data(), reply.size());
  return in.get_blob();
}

bool TcpStore::delete_key(const std::string& key) {
  auto body = request(Command::kDelete);
  util::ByteWriter(body).put_string(key);
  auto reply =
      with_connection([&](Connection& c) { return c.call(body, timeout(), "store.delete_key"); });
  return !reply.empty() && reply[0] != 0;
}

bool TcpStore::check(const std::vector<std::string>& keys) {
  auto body = request(Command::kCheck);
  util::ByteWriter out(body);
  store::write_keys(out, keys);
  auto reply =
      with_connection([&](Connection& c) { return c.call(body, timeout(), "store.check"); });
  return !reply.empty() && reply[0] != 0;
}

int64_t TcpStore::num_keys() {
  auto reply = with_connection([&](Connection& c) {
    return c.call(request(Command::kNumKeys), timeout(), "store.num_keys");
  });
  util::ByteReader in(reply.data(), reply.size());
  return in.get<int64_t>();
}

void TcpStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  auto body = request(Command::kWait);
  util::ByteWriter out(body);
  store::write_keys(out, keys);
  out.put<uint64_t>(millis(timeout));
  with_connection([&](Connection& c) { return c.call(body, timeout, "store.wait"); });
}

std::vector<Bytes> TcpStore::multi_get(const std::vector<std::string>& keys) {
  auto body = request(Command::kMultiGet);
  util::ByteWriter out(body);
  store::write_keys(out, keys);
  out.put<uint64_t>(millis(timeout()));
  auto reply =
      with_connection([&](Connection& c) { return c.call(body, timeout(), "store.multi_get"); });
  util::ByteReader in(reply.data(), reply.size());
  uint32_t count = in.get<uint32_t>();
  std::vector<Bytes> values;
  values.reserve(count);
  for (uint32_t i = 0; i < count; ++i) values.push_back(in.get_blob());
  return values;
}

void TcpStore::multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  if (keys.size() != values.size()) {
    throw Error(ErrorCode::kInvalidArgument, "store.multi_set: " + std::to_string(keys.size()) +
                                                 " keys but " + std::to_string(values.size()) +
                                                 " values");
  }
  auto body = request(Command::kMultiSet);
  util::ByteWriter out(body);
  out.put<uint32_t>(static_cast<uint32_t>(keys.size()));
  for (std::size_t i = 0; i < keys.size(); ++i) {
    out.put_string(keys[i]);
    out.put_blob(values[i]);
  }
  with_connection([&](Connection& c) { return c.call(body, timeout(), "store.multi_set"); });
}

}  // namespace weft
