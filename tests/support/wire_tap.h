// Raw sockets for tests of what crosses the wire: a relay that records both directions of one
// connection (a tap between two endpoints the test does not control), and a few blocking
// helpers with deadlines for impostors written by hand.
//
// Contract: every call is bounded by a deadline; nothing here blocks forever. A WireTap serves
// one connection on its own thread and is joined by its destructor.
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "util/socket.h"

namespace weft::testing {

using Bytes8 = std::vector<uint8_t>;

// Reads whatever arrives until `size` bytes came, the peer closed, or the deadline passed.
// `closed` tells whether the peer closed (or reset) the connection.
inline Bytes8 read_for(int fd, std::size_t size, std::chrono::milliseconds within,
                       bool* closed = nullptr) {
  Bytes8 got;
  auto deadline = std::chrono::steady_clock::now() + within;
  if (closed) *closed = false;
  while (got.size() < size) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    uint8_t chunk[4096];
    ssize_t n = ::recv(fd, chunk, std::min(sizeof chunk, size - got.size()), 0);
    if (n <= 0) {
      if (closed) *closed = true;
      break;
    }
    got.insert(got.end(), chunk, chunk + n);
  }
  return got;
}

inline void send_bytes(int fd, const Bytes8& bytes) {
  ssize_t ignored = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  (void)ignored;
}

inline bool contains(const Bytes8& haystack, const std::string& needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end()) !=
         haystack.end();
}

inline util::Fd connect_to(const util::SocketAddress& address) {
  return util::connect_retrying(address,
                                std::chrono::steady_clock::now() + std::chrono::seconds(5));
}

// Listens on 127.0.0.1; forwards the first connection it accepts to `target` and records what
// flows each way, until either side closes or the tap is destroyed. It can hold back what
// follows the first bytes toward the target (a handshake message delayed in the network).
class WireTap {
 public:
  explicit WireTap(util::SocketAddress target)
      : target_(target),
        listener_(util::listen_on(util::resolve("127.0.0.1", 0), /*non_blocking=*/false)),
        address_(util::local_address_of(listener_.get())) {
    thread_ = std::thread([this] { run(); });
  }
  ~WireTap() {
    stop_ = true;
    thread_.join();
  }

  util::SocketAddress address() const { return address_; }
  // Forwards at most `bytes` toward the target until release(); the rest waits in the socket.
  void hold_to_target_after(std::size_t bytes) { to_target_limit_ = bytes; }
  void release() { to_target_limit_ = SIZE_MAX; }
  Bytes8 to_target() const {
    std::lock_guard lock(mutex_);
    return to_target_;
  }
  Bytes8 from_target() const {
    std::lock_guard lock(mutex_);
    return from_target_;
  }

 private:
  void run() {
    pollfd wait_accept{listener_.get(), POLLIN, 0};
    while (!stop_ && ::poll(&wait_accept, 1, 50) <= 0) {
    }
    if (stop_) return;
    util::Fd client(::accept(listener_.get(), nullptr, nullptr));
    util::Fd server = connect_to(target_);
    if (!client.valid() || !server.valid()) return;
    while (!stop_) {
      const std::size_t allowed = to_target_limit_ - to_target().size();
      // A negative fd is not polled: held bytes stay in the client's socket.
      pollfd both[2] = {{allowed > 0 ? client.get() : -1, POLLIN, 0}, {server.get(), POLLIN, 0}};
      if (::poll(both, 2, 50) <= 0) continue;
      if (!forward(both[0], client.get(), server.get(), to_target_, allowed)) return;
      if (!forward(both[1], server.get(), client.get(), from_target_, SIZE_MAX)) return;
    }
  }

  bool forward(const pollfd& ready, int from, int to, Bytes8& record, std::size_t allowed) {
    if (!(ready.revents & (POLLIN | POLLHUP | POLLERR))) return true;
    uint8_t chunk[65536];
    ssize_t n = ::recv(from, chunk, std::min(sizeof chunk, allowed), 0);
    if (n <= 0) return false;
    {
      std::lock_guard lock(mutex_);
      record.insert(record.end(), chunk, chunk + n);
    }
    send_bytes(to, Bytes8(chunk, chunk + n));
    return true;
  }

  util::SocketAddress target_;
  util::Fd listener_;
  util::SocketAddress address_;
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> to_target_limit_{SIZE_MAX};
  mutable std::mutex mutex_;
  Bytes8 to_target_;
  Bytes8 from_target_;
  std::thread thread_;
};

}  // namespace weft::testing
