#include "util/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "util/interface_filter.h"
#include "util/log.h"
#include "weft/error.h"

namespace weft::util {

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

void throw_system_error(const std::string& call, int error_number) {
  throw Error(ErrorCode::kSystem, call + ": " + std::strerror(error_number));
}

int SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return -1;
}

void SocketAddress::set_port(int port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
}

namespace {

const in6_addr* ipv6_of(const SocketAddress& address) {
  if (address.family() != AF_INET6) return nullptr;
  return &reinterpret_cast<const sockaddr_in6*>(&address.storage)->sin6_addr;
}

// The IPv4 address of an IPv6 one that only carries it (::ffff:a.b.c.d), in network order.
std::optional<in_addr> mapped_ipv4(const SocketAddress& address) {
  const in6_addr* v6 = ipv6_of(address);
  if (!v6 || !IN6_IS_ADDR_V4MAPPED(v6)) return std::nullopt;
  in_addr v4{};
  std::memcpy(&v4, v6->s6_addr + 12, sizeof v4);
  return v4;
}

}  // namespace

std::string SocketAddress::host() const {
  char text[INET6_ADDRSTRLEN] = "?";
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, text,
              sizeof text);
  } else if (std::optional<in_addr> v4 = mapped_ipv4(*this)) {
    inet_ntop(AF_INET, &*v4, text, sizeof text);
  } else if (family() == AF_INET6) {
    inet_ntop(AF_INET6, ipv6_of(*this), text, sizeof text);
  }
  return text;
}

std::string SocketAddress::to_string() const {
  if (family() == AF_INET6 && !mapped_ipv4(*this)) {
    return "[" + host() + "]:" + std::to_string(port());
  }
  return host() + ":" + std::to_string(port());
}

bool SocketAddress::is_loopback() const {
  if (family() == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&storage);
    return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
  }
  if (std::optional<in_addr> v4 = mapped_ipv4(*this)) return (ntohl(v4->s_addr) >> 24) == 127;
  if (const in6_addr* v6 = ipv6_of(*this)) return IN6_IS_ADDR_LOOPBACK(v6);
  return false;
}

bool SocketAddress::is_link_local() const {
  const in6_addr* v6 = ipv6_of(*this);
  return v6 && IN6_IS_ADDR_LINKLOCAL(v6);
}

bool SocketAddress::is_wildcard() const {
  if (family() == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr.s_addr == htonl(INADDR_ANY);
  }
  const in6_addr* v6 = ipv6_of(*this);
  return v6 && IN6_IS_ADDR_UNSPECIFIED(v6);
}

bool SocketAddress::operator==(const SocketAddress& other) const {
  if (family() != other.family() || port() != other.port()) return false;
  if (family() == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(&other.storage)->sin_addr.s_addr;
  }
  if (family() == AF_INET6) return IN6_ARE_ADDR_EQUAL(ipv6_of(*this), ipv6_of(other));
  return false;
}

SocketAddress resolve(const std::string& bracketed_host, int port) {
  // "[fd00::1]" is how an IPv6 host is written where a port may follow; getaddrinfo wants it bare.
  const bool bracketed =
      bracketed_host.size() > 2 && bracketed_host.front() == '[' && bracketed_host.back() == ']';
  const std::string host =
      bracketed ? bracketed_host.substr(1, bracketed_host.size() - 2) : bracketed_host;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG | (host.empty() ? AI_PASSIVE : 0);
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0 && (hints.ai_flags & AI_ADDRCONFIG)) {
    // Loopback-only machines (network namespaces) have no "configured" address family.
    hints.ai_flags &= ~AI_ADDRCONFIG;
    rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
  }
  if (rc != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "cannot resolve host '" + host + "': " + gai_strerror(rc));
  }
  const addrinfo* chosen = found;
  for (const addrinfo* it = found; it; it = it->ai_next) {
    if (it->ai_family == AF_INET) {
      chosen = it;
      break;
    }
  }
  SocketAddress address;
  std::memcpy(&address.storage, chosen->ai_addr, chosen->ai_addrlen);
  address.length = chosen->ai_addrlen;
  freeaddrinfo(found);
  return address;
}

SocketAddress every_address(int port) {
  // A kernel without IPv6 refuses the socket; one where IPV6_V6ONLY cannot be cleared would
  // leave IPv4 peers out. Either way IPv4's wildcard serves.
  Fd probe(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int off = 0;
  if (probe.valid() &&
      ::setsockopt(probe.get(), IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off) == 0) {
    return resolve("::", port);
  }
  return resolve("0.0.0.0", port);
}

std::pair<std::string, int> split_host_port(const std::string& text, const std::string& what) {
  std::string host;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      throw Error(ErrorCode::kInvalidArgument, what + "='" + text + "' is not [host]:port");
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos) {
      throw Error(ErrorCode::kInvalidArgument, what + "='" + text + "' is not host:port");
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  char* end = nullptr;
  long value = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || value < 0 || value > 65535) {
    throw Error(ErrorCode::kInvalidArgument,
                what + "='" + text + "' has an invalid port '" + port + "'");
  }
  return {host, static_cast<int>(value)};
}

SocketAddress local_address_towards(const std::string& host) {
  SocketAddress remote = resolve(host, 9);
  Fd fd(::socket(remote.family(), SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) throw_system_error("socket", errno);
  if (::connect(fd.get(), remote.raw(), remote.length) != 0) {
    throw_system_error("connect (route to " + host + ")", errno);
  }
  SocketAddress local = local_address_of(fd.get());
  local.set_port(0);
  return local;
}

std::vector<SocketAddress> interface_addresses(const std::string& spec) {
  InterfaceFilter filter = InterfaceFilter::parse(spec);
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) throw_system_error("getifaddrs", errno);
  std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> owner(list, freeifaddrs);
  auto has_ip = [](const ifaddrs* it) {
    return it->ifa_addr &&
           (it->ifa_addr->sa_family == AF_INET || it->ifa_addr->sa_family == AF_INET6);
  };
  // The kernel's order: each interface where its first IP address is listed.
  std::vector<std::string> names;
  for (ifaddrs* it = list; it; it = it->ifa_next) {
    if (has_ip(it) && std::find(names.begin(), names.end(), it->ifa_name) == names.end()) {
      names.emplace_back(it->ifa_name);
    }
  }
  filter.choose(names);  // throws when none matches
  std::vector<std::string> matching = filter.select(names);
  std::vector<SocketAddress> found;
  std::string described;
  for (const std::string& name : matching) {
    for (int want : {AF_INET, AF_INET6}) {
      for (ifaddrs* it = list; it; it = it->ifa_next) {
        if (!has_ip(it) || name != it->ifa_name || it->ifa_addr->sa_family != want) continue;
        SocketAddress address;
        address.length = want == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
        std::memcpy(&address.storage, it->ifa_addr, address.length);
        address.set_port(0);
        if (address.is_link_local()) continue;
        found.push_back(address);
        described += (described.empty() ? "" : ", ") + name + " " + address.host();
      }
    }
  }
  if (found.empty()) {
    std::string all;
    for (const std::string& name : matching) all += (all.empty() ? "" : ", ") + name;
    throw Error(ErrorCode::kInvalidArgument,
                filter.describe() + " matches " + all +
                    ", which have no address a peer can reach (only link-local IPv6)");
  }
  log_info(Subsys::kTransport, [&] {
    return filter.describe() + ": listening on " + described +
           (filter.excludes() ? " (the kernel's order)" : " (the list's order, then the kernel's)");
  });
  return found;
}

SocketAddress interface_address(const std::string& spec) {
  return interface_addresses(spec).front();
}

Fd listen_on(const SocketAddress& address, bool non_blocking, int backlog) {
  int flags = SOCK_STREAM | SOCK_CLOEXEC | (non_blocking ? SOCK_NONBLOCK : 0);
  Fd fd(::socket(address.family(), flags, 0));
  if (!fd.valid()) throw_system_error("socket", errno);
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (address.family() == AF_INET6 && address.is_wildcard()) {
    // Dual stack: IPv4 peers reach [::] too (their addresses arrive as ::ffff:a.b.c.d).
    int off = 0;
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
  }
  if (::bind(fd.get(), address.raw(), address.length) != 0) {
    throw_system_error("bind " + address.to_string(), errno);
  }
  if (::listen(fd.get(), backlog) != 0) throw_system_error("listen", errno);
  return fd;
}

SocketAddress local_address_of(int fd) {
  SocketAddress address;
  address.length = sizeof address.storage;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address.storage), &address.length) != 0) {
    throw_system_error("getsockname", errno);
  }
  return address;
}

static int millis_until(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > 1'000'000 ? 1'000'000 : static_cast<int>(left.count());
}

Fd connect_started(const SocketAddress& address, int* error,
                   const std::function<void(int fd)>& before_connect) {
  Fd fd(::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) throw_system_error("socket", errno);
  set_no_delay(fd.get());
  if (before_connect) before_connect(fd.get());
  *error = 0;
  if (::connect(fd.get(), address.raw(), address.length) != 0 && errno != EINPROGRESS) {
    *error = errno;
  }
  return fd;
}

Fd connect_with_deadline(const SocketAddress& address,
                         std::chrono::steady_clock::time_point deadline) {
  Fd fd(::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) throw_system_error("socket", errno);
  if (::connect(fd.get(), address.raw(), address.length) != 0) {
    if (errno == ECONNREFUSED) return Fd();
    if (errno != EINPROGRESS) throw_system_error("connect " + address.to_string(), errno);
    pollfd p{fd.get(), POLLOUT, 0};
    int ready;
    do {
      ready = ::poll(&p, 1, millis_until(deadline));
    } while (ready < 0 && errno == EINTR);
    if (ready == 0) {
      throw Error(ErrorCode::kTimeout, "connect to " + address.to_string() + " timed out");
    }
    int error = 0;
    socklen_t length = sizeof error;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &length);
    if (error == ECONNREFUSED) return Fd();
    if (error != 0) throw_system_error("connect " + address.to_string(), error);
  }
  int flags = ::fcntl(fd.get(), F_GETFL);
  ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  set_no_delay(fd.get());
  return fd;
}

void set_non_blocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    throw_system_error("fcntl(O_NONBLOCK)", errno);
  }
}

void set_no_delay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

std::chrono::microseconds round_trip_time(int fd) {
  tcp_info info{};
  socklen_t length = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return {};
  return std::chrono::microseconds(info.tcpi_rtt);
}

void set_close_on_exec(int fd) { ::fcntl(fd, F_SETFD, FD_CLOEXEC); }

void write_all(int fd, const void* data, std::size_t size) {
  write_all(fd, data, size, std::chrono::steady_clock::time_point::max());
}

Fd connect_retrying(const SocketAddress& address, std::chrono::steady_clock::time_point deadline) {
  auto pause = std::chrono::milliseconds(10);
  for (;;) {
    Fd fd = connect_with_deadline(address, deadline);
    if (fd.valid() || std::chrono::steady_clock::now() + pause >= deadline) return fd;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
  }
}

void write_all(int fd, const void* data, std::size_t size,
               std::chrono::steady_clock::time_point deadline) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    pollfd ready{fd, POLLOUT, 0};
    int rc = ::poll(&ready, 1, millis_until(deadline));
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) throw_system_error("poll", errno);
    if (rc == 0) {
      // poll() waits at most ~17 minutes at a time; only the deadline ends the write.
      if (std::chrono::steady_clock::now() < deadline) continue;
      throw Error(ErrorCode::kTimeout, "the other side took nothing before the deadline");
    }
    ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == EPIPE || errno == ECONNRESET) {
        throw Error(ErrorCode::kPeerFailure, "connection closed by the other side");
      }
      throw_system_error("send", errno);
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

void read_exact(int fd, void* data, std::size_t size,
                std::chrono::steady_clock::time_point deadline) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    pollfd ready{fd, POLLIN, 0};
    int rc = ::poll(&ready, 1, millis_until(deadline));
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) throw_system_error("poll", errno);
    if (rc == 0) throw Error(ErrorCode::kTimeout, "no answer before the deadline");
    ssize_t n = ::recv(fd, p, size, 0);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == ECONNRESET) throw Error(ErrorCode::kPeerFailure, "connection reset");
      throw_system_error("recv", errno);
    }
    if (n == 0) throw Error(ErrorCode::kPeerFailure, "connection closed by the other side");
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

}  // namespace weft::util
