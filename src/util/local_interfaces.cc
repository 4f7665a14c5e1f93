#include "util/local_interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "weft/error.h"

namespace weft::util {
namespace {

int prefix_length_of(const sockaddr* netmask) {
  if (!netmask) return 0;
  const auto* bytes = netmask->sa_family == AF_INET
                          ? reinterpret_cast<const uint8_t*>(
                                &reinterpret_cast<const sockaddr_in*>(netmask)->sin_addr)
                          : reinterpret_cast<const uint8_t*>(
                                &reinterpret_cast<const sockaddr_in6*>(netmask)->sin6_addr);
  const int size = netmask->sa_family == AF_INET ? 4 : 16;
  int length = 0;
  for (int i = 0; i < size; ++i) length += __builtin_popcount(bytes[i]);
  return length;
}

// The address's bytes as IPv4 (4 bytes) or IPv6 (16), IPv4 mapped into IPv6 as IPv4.
std::vector<uint8_t> bytes_of(const SocketAddress& address) {
  if (address.family() == AF_INET) {
    const auto* v4 = &reinterpret_cast<const sockaddr_in*>(&address.storage)->sin_addr;
    const auto* begin = reinterpret_cast<const uint8_t*>(v4);
    return {begin, begin + 4};
  }
  if (address.family() == AF_INET6) {
    const in6_addr* v6 = &reinterpret_cast<const sockaddr_in6*>(&address.storage)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(v6)) return {v6->s6_addr + 12, v6->s6_addr + 16};
    return {v6->s6_addr, v6->s6_addr + 16};
  }
  return {};
}

}  // namespace

std::vector<InterfaceAddress> local_interface_addresses() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) throw_system_error("getifaddrs", errno);
  std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> owner(list, freeifaddrs);
  std::vector<InterfaceAddress> found;
  for (const ifaddrs* it = list; it; it = it->ifa_next) {
    if (!it->ifa_addr || !(it->ifa_flags & IFF_UP)) continue;
    const int family = it->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    InterfaceAddress entry;
    entry.name = it->ifa_name;
    entry.address.length = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&entry.address.storage, it->ifa_addr, entry.address.length);
    entry.address.set_port(0);
    entry.prefix_length = prefix_length_of(it->ifa_netmask);
    entry.loopback = (it->ifa_flags & IFF_LOOPBACK) != 0;
    found.push_back(std::move(entry));
  }
  return found;
}

bool in_subnet_of(const SocketAddress& address, const InterfaceAddress& interface) {
  std::vector<uint8_t> ours = bytes_of(interface.address);
  std::vector<uint8_t> theirs = bytes_of(address);
  if (ours.empty() || ours.size() != theirs.size()) return false;
  int bits = std::min<int>(interface.prefix_length, static_cast<int>(ours.size()) * 8);
  for (std::size_t i = 0; bits > 0; ++i, bits -= 8) {
    const uint8_t mask = bits >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - bits));
    if ((ours[i] & mask) != (theirs[i] & mask)) return false;
  }
  return true;
}

InterfaceAddress interface_address_of(const std::string& name, const std::string& cidr,
                                      bool loopback) {
  auto slash = cidr.find('/');
  if (slash == std::string::npos) {
    throw Error(ErrorCode::kInvalidArgument, "'" + cidr + "' is not address/prefix");
  }
  InterfaceAddress entry;
  entry.name = name;
  entry.address = resolve(cidr.substr(0, slash), 0);
  entry.prefix_length = std::stoi(cidr.substr(slash + 1));
  entry.loopback = loopback;
  return entry;
}

}  // namespace weft::util
