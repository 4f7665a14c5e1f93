// TorchStoreClient — a client of torch's TCPStore server, the store torchrun's agent serves on
// MASTER_ADDR:MASTER_PORT for the ranks it starts (TORCHELASTIC_USE_AGENT_STORE=True). A rank
// under torchrun must not serve a store of its own on that port (the agent holds it), so weft
// rendezvouses through the agent's store, speaking torch's protocol.
//
// The protocol (torch 2.x, classic and libuv servers alike): after connecting, the client sends
// VALIDATE and a magic number; every request is then a command byte followed by its arguments,
// strings and byte arrays as a little-endian uint64 length and the bytes, counts as uint64.
// Keys carry torch's "/" prefix, so a Python torch client of the same store sees the same keys.
//
// One connection, one request at a time. Every read and write has a deadline: a server that
// stops answering fails the call with kTimeout, a closed one with kPeerFailure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/mutex.h"
#include "util/socket.h"
#include "weft/error.h"
#include "weft/store.h"

namespace weft::store {

class TorchStoreClient final : public Store {
 public:
  // Connects to host:port, retrying refused connections until `timeout` passes.
  TorchStoreClient(const std::string& host, int port, Duration timeout);

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool delete_key(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t num_keys() override;
  void wait(const std::vector<std::string>& keys, Duration timeout) override;
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys) override;
  void multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override;
  using Store::wait;

 private:
  class Request;

  // With the lock held: one request at a time on the connection.
  void wait_locked(const std::vector<std::string>& keys, Duration timeout, const char* op)
      WEFT_REQUIRES(mutex_);
  void send(const std::vector<uint8_t>& bytes, const char* op) WEFT_REQUIRES(mutex_);
  void receive(void* data, std::size_t size, const char* op) WEFT_REQUIRES(mutex_);
  template <typename T>
  T receive_value(const char* op) WEFT_REQUIRES(mutex_) {
    T value{};
    receive(&value, sizeof value, op);
    return value;
  }
  Bytes receive_bytes(const char* op) WEFT_REQUIRES(mutex_);
  ErrorContext context(const char* op) const;

  util::SocketAddress address_;
  util::Mutex mutex_;
  util::Fd fd_ WEFT_GUARDED_BY(mutex_);
};

}  // namespace weft::store
