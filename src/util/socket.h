// Thin, checked wrappers over BSD sockets: an owning fd, addresses, listen/connect helpers.
//
// Everything here knows bytes and addresses, nothing about weft's protocols. Failures throw
// weft::Error(kSystem) with the call and errno text. Thread-safety: none needed (values).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace weft::util {

// An owning file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// An IPv4 or IPv6 socket address.
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  int family() const { return storage.ss_family; }
  int port() const;
  void set_port(int port);
  // "1.2.3.4:80" or "[::1]:80". An IPv4 peer accepted by a dual-stack listener (::ffff:1.2.3.4)
  // is shown as the IPv4 address it is.
  std::string to_string() const;
  // Only the host part, without brackets.
  std::string host() const;
  // 127.0.0.0/8 or ::1 (or 127.0.0.0/8 mapped into IPv6).
  bool is_loopback() const;
  // IPv6 fe80::/10: meaningless without the scope id of an interface, which no peer shares.
  bool is_link_local() const;
  // 0.0.0.0 or ::.
  bool is_wildcard() const;
  // Same family, address and port.
  bool operator==(const SocketAddress& other) const;
  const sockaddr* raw() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

// Resolves host (name or literal, an IPv6 literal with or without brackets; "" means the
// wildcard address) and port. Prefers IPv4.
SocketAddress resolve(const std::string& host, int port);
// Where a listener reaches every address of this host: IPv6's wildcard [::], which takes IPv4
// connections too (dual stack), where the kernel has IPv6; else 0.0.0.0.
SocketAddress every_address(int port);
// Splits "host:port" / "[v6]:port"; throws kInvalidArgument naming `what`.
std::pair<std::string, int> split_host_port(const std::string& text, const std::string& what);

// The local address the kernel would use to reach `host` (a UDP connect, no packet sent).
SocketAddress local_address_towards(const std::string& host);
// The addresses of every interface that WEFT_SOCKET_IFNAME's value `spec` chooses (NCCL's syntax
// and choice order: util/interface_filter.h) among the interfaces with an IP address: interface
// by interface in that order, each one's IPv4 addresses before its IPv6 ones. Link-local IPv6
// addresses are left out (a peer would need its own interface's scope to reach them). Logged at
// INFO; throws kInvalidArgument naming the value and the interfaces there are when none matches.
std::vector<SocketAddress> interface_addresses(const std::string& spec);
// interface_addresses(spec).front().
SocketAddress interface_address(const std::string& spec);

// A listening TCP socket bound to address (port 0: any free port). Non-blocking when asked.
// Bound to [::], it takes IPv4 connections too, whatever the system's bindv6only default.
Fd listen_on(const SocketAddress& address, bool non_blocking, int backlog = 1024);
SocketAddress local_address_of(int fd);

// A non-blocking socket whose connect to `address` has begun (TCP_NODELAY set). *error is the
// errno of a connect that failed at once, 0 when it is under way or done. `before_connect`, if
// given, is called with the socket first: on loopback the connection may be established before
// connect() returns.
Fd connect_started(const SocketAddress& address, int* error,
                   const std::function<void(int fd)>& before_connect = nullptr);

// Blocking connect with a deadline; returns an invalid Fd on ECONNREFUSED (so that callers can
// retry while a server starts), throws kTimeout / kSystem otherwise.
Fd connect_with_deadline(const SocketAddress& address,
                         std::chrono::steady_clock::time_point deadline);

// connect_with_deadline, retried with growing pauses while the connection is refused (a server
// still starting); an invalid Fd when it is still refused at the deadline.
Fd connect_retrying(const SocketAddress& address, std::chrono::steady_clock::time_point deadline);

void set_non_blocking(int fd);
void set_no_delay(int fd);
// The kernel's smoothed round-trip time of a connected TCP socket; 0 when it cannot tell.
std::chrono::microseconds round_trip_time(int fd);
void set_close_on_exec(int fd);

// Writes all bytes, however long the peer takes; throws kPeerFailure on a closed peer.
void write_all(int fd, const void* data, std::size_t size);
// Writes all bytes before the deadline (a peer that stops reading cannot hold the caller);
// throws kTimeout or kPeerFailure.
void write_all(int fd, const void* data, std::size_t size,
               std::chrono::steady_clock::time_point deadline);
// Reads exactly size bytes before the deadline; throws kTimeout or kPeerFailure.
void read_exact(int fd, void* data, std::size_t size,
                std::chrono::steady_clock::time_point deadline);

// "call: strerror(errno)" as an Error(kSystem).
[[noreturn]] void throw_system_error(const std::string& call, int error_number);

}  // namespace weft::util
