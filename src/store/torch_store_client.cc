#include "store/torch_store_client.h"

#include "util/deadline.h"
#include "weft/error.h"

namespace weft::store {

namespace {

// torch's QueryType, CheckResponseType and WaitResponseType (TCPStoreBackend.hpp).
enum class Query : uint8_t {
  kValidate = 0,
  kSet = 1,
  kCompareSet = 2,
  kGet = 3,
  kAdd = 4,
  kCheck = 5,
  kWait = 6,
  kNumKeys = 7,
  kDeleteKey = 8,
  kMultiGet = 10,
  kMultiSet = 11,
  kCancelWait = 12,
};
constexpr uint32_t kValidationMagic = 0x3C85F7CE;
constexpr uint8_t kCheckReady = 0;
constexpr uint8_t kStopWaiting = 0;
constexpr uint8_t kWaitCanceled = 1;

// How long a reply may take once the server has what it needs (it answers at once).
constexpr std::chrono::milliseconds kReplyGrace{5000};
// A value larger than this in a reply is a broken stream, not a rendezvous value.
constexpr uint64_t kMaxValueBytes = uint64_t{1} << 30;

std::string torch_key(const std::string& key) { return "/" + key; }

std::string joined(const std::vector<std::string>& keys) {
  std::string text;
  for (const auto& key : keys) text += (text.empty() ? "" : ", ") + key;
  return text;
}

}  // namespace

// One request's bytes, in torch's encoding (host byte order: torch's is little-endian too).
class TorchStoreClient::Request {
 public:
  explicit Request(Query query) { bytes_.push_back(static_cast<uint8_t>(query)); }

  template <typename T>
  Request& value(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof v);
    return *this;
  }
  Request& bytes(const void* data, std::size_t size) {
    value<uint64_t>(size);
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + size);
    return *this;
  }
  Request& key(const std::string& k) {
    std::string prefixed = torch_key(k);
    return bytes(prefixed.data(), prefixed.size());
  }
  Request& keys(const std::vector<std::string>& ks) {
    value<uint64_t>(ks.size());
    for (const auto& k : ks) key(k);
    return *this;
  }
  Request& blob(const Bytes& b) { return bytes(b.data(), b.size()); }

  const std::vector<uint8_t>& encoded() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

TorchStoreClient::TorchStoreClient(const std::string& host, int port, Duration timeout)
    : address_(util::resolve(host, port)) {
  timeout_ = timeout;
  fd_ = util::connect_retrying(address_, util::deadline_after(timeout));
  if (!fd_.valid()) {
    throw Error(ErrorCode::kTimeout,
                "no torch store (torchrun's agent store) answered at " + address_.to_string() +
                    " within " + std::to_string(timeout.count()) + " ms (connection refused)",
                context("store.connect"));
  }
  util::set_no_delay(fd_.get());
  send(Request(Query::kValidate).value(kValidationMagic).encoded(), "store.connect");
}

ErrorContext TorchStoreClient::context(const char* op) const {
  return ErrorContext{.op = op, .peer_address = address_.to_string()};
}

void TorchStoreClient::send(const std::vector<uint8_t>& bytes, const char* op) {
  try {
    util::write_all(fd_.get(), bytes.data(), bytes.size(), util::deadline_after(timeout()));
  } catch (const Error& e) {
    throw Error(e.code(), "torch store: " + e.message(), context(op));
  }
}

void TorchStoreClient::receive(void* data, std::size_t size, const char* op) {
  try {
    util::read_exact(fd_.get(), data, size, util::deadline_after(timeout() + kReplyGrace));
  } catch (const Error& e) {
    throw Error(e.code(), "torch store: " + e.message(), context(op));
  }
}

Bytes TorchStoreClient::receive_bytes(const char* op) {
  auto size = receive_value<uint64_t>(op);
  if (size > kMaxValueBytes) {
    throw Error(ErrorCode::kInternal,
                "torch store: a reply announced " + std::to_string(size) +
                    " bytes; the stream is not torch's store protocol",
                context(op));
  }
  Bytes value(size);
  if (size > 0) receive(value.data(), size, op);
  return value;
}

void TorchStoreClient::wait_locked(const std::vector<std::string>& keys, Duration timeout,
                                   const char* op) {
  send(Request(Query::kWait).keys(keys).encoded(), op);
  uint8_t response = 0;
  try {
    util::read_exact(fd_.get(), &response, 1, util::deadline_after(timeout));
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kTimeout) throw Error(e.code(), e.message(), context(op));
    // The server still holds the wait: cancel it so that the connection carries no stale
    // answer. It may have answered just before the cancel arrived.
    send(Request(Query::kCancelWait).encoded(), op);
    response = receive_value<uint8_t>(op);
    if (response == kStopWaiting) response = receive_value<uint8_t>(op);
    if (response != kWaitCanceled) {
      throw Error(ErrorCode::kInternal, "torch store: unexpected answer to a cancelled wait",
                  context(op));
    }
    throw Error(ErrorCode::kTimeout,
                std::string(op) + ": keys " + joined(keys) + " still missing after " +
                    std::to_string(timeout.count()) + " ms",
                context(op));
  }
  if (response != kStopWaiting) {
    throw Error(ErrorCode::kInternal, "torch store: unexpected answer to a wait", context(op));
  }
}

void TorchStoreClient::set(const std::string& key, const Bytes& value) {
  util::MutexLock lock(mutex_);
  send(Request(Query::kSet).key(key).blob(value).encoded(), "store.set");
}

Bytes TorchStoreClient::get(const std::string& key) {
  util::MutexLock lock(mutex_);
  wait_locked({key}, timeout(), "store.get");
  send(Request(Query::kGet).key(key).encoded(), "store.get");
  return receive_bytes("store.get");
}

int64_t TorchStoreClient::add(const std::string& key, int64_t delta) {
  util::MutexLock lock(mutex_);
  send(Request(Query::kAdd).key(key).value<int64_t>(delta).encoded(), "store.add");
  return receive_value<int64_t>("store.add");
}

Bytes TorchStoreClient::compare_set(const std::string& key, const Bytes& expected,
                                    const Bytes& desired) {
  util::MutexLock lock(mutex_);
  send(Request(Query::kCompareSet).key(key).blob(expected).blob(desired).encoded(),
       "store.compare_set");
  return receive_bytes("store.compare_set");
}

bool TorchStoreClient::delete_key(const std::string& key) {
  util::MutexLock lock(mutex_);
  send(Request(Query::kDeleteKey).key(key).encoded(), "store.delete_key");
  return receive_value<int64_t>("store.delete_key") == 1;
}

bool TorchStoreClient::check(const std::vector<std::string>& keys) {
  util::MutexLock lock(mutex_);
  send(Request(Query::kCheck).keys(keys).encoded(), "store.check");
  return receive_value<uint8_t>("store.check") == kCheckReady;
}

int64_t TorchStoreClient::num_keys() {
  util::MutexLock lock(mutex_);
  send(Request(Query::kNumKeys).encoded(), "store.num_keys");
  return receive_value<int64_t>("store.num_keys");
}

void TorchStoreClient::wait(const std::vector<std::string>& keys, Duration timeout) {
  util::MutexLock lock(mutex_);
  wait_locked(keys, timeout, "store.wait");
}

std::vector<Bytes> TorchStoreClient::multi_get(const std::vector<std::string>& keys) {
  util::MutexLock lock(mutex_);
  wait_locked(keys, timeout(), "store.multi_get");
  send(Request(Query::kMultiGet).keys(keys).encoded(), "store.multi_get");
  std::vector<Bytes> values;
  values.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) values.push_back(receive_bytes("store.multi_get"));
  return values;
}

void TorchStoreClient::multi_set(const std::vector<std::string>& keys,
                                 const std::vector<Bytes>& values) {
  if (keys.size() != values.size()) {
    throw Error(ErrorCode::kInvalidArgument,
                "multi_set: " + std::to_string(keys.size()) + " keys but " +
                    std::to_string(values.size()) + " values",
                context("store.multi_set"));
  }
  Request request(Query::kMultiSet);
  request.value<uint64_t>(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) request.key(keys[i]).blob(values[i]);
  util::MutexLock lock(mutex_);
  send(request.encoded(), "store.multi_set");
}

}  // namespace weft::store
