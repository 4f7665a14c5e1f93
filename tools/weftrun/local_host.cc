#include "local_host.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace weft::run {
namespace {

// An address's bytes, without port or scope, for comparing a resolved address with an
// interface's.
struct RawAddress {
  int family = 0;
  unsigned char bytes[16] = {};

  bool operator==(const RawAddress& other) const {
    std::size_t size = family == AF_INET ? 4 : 16;
    return family == other.family && std::memcmp(bytes, other.bytes, size) == 0;
  }
  bool loopback() const {
    if (family == AF_INET) return bytes[0] == 127;
    static const unsigned char kV6Loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return std::memcmp(bytes, kV6Loopback, 16) == 0;
  }
};

bool raw_address_of(const sockaddr* address, RawAddress& raw) {
  if (address == nullptr) return false;
  if (address->sa_family == AF_INET) {
    raw.family = AF_INET;
    std::memcpy(raw.bytes, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, 4);
    return true;
  }
  if (address->sa_family == AF_INET6) {
    raw.family = AF_INET6;
    std::memcpy(raw.bytes, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, 16);
    return true;
  }
  return false;
}

std::vector<RawAddress> resolve_all(const std::string& host) {
  std::vector<RawAddress> addresses;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return addresses;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    RawAddress raw;
    if (raw_address_of(a->ai_addr, raw)) addresses.push_back(raw);
  }
  ::freeaddrinfo(found);
  return addresses;
}

std::vector<RawAddress> interface_addresses() {
  std::vector<RawAddress> addresses;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return addresses;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    RawAddress raw;
    if (raw_address_of(i->ifa_addr, raw)) addresses.push_back(raw);
  }
  ::freeifaddrs(list);
  return addresses;
}

bool is_own_host_name(const std::string& host) {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return false;
  std::string own = name;
  return host == own || host == own.substr(0, own.find('.'));
}

}  // namespace

bool is_this_host(const std::string& host) {
  if (host == "localhost" || is_own_host_name(host)) return true;
  std::vector<RawAddress> resolved = resolve_all(host);
  if (resolved.empty()) return false;
  std::vector<RawAddress> own = interface_addresses();
  for (const RawAddress& address : resolved) {
    if (address.loopback()) continue;
    bool found = false;
    for (const RawAddress& mine : own) found = found || mine == address;
    if (!found) return false;
  }
  return true;
}

bool is_loopback_only(const std::string& host) {
  std::vector<RawAddress> resolved = resolve_all(host);
  if (resolved.empty()) return false;
  for (const RawAddress& address : resolved) {
    if (!address.loopback()) return false;
  }
  return true;
}

}  // namespace weft::run
