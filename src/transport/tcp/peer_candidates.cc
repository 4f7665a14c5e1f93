#include "transport/tcp/peer_candidates.h"

#include <algorithm>

namespace weft::transport {
namespace {

void add_once(std::vector<util::SocketAddress>& list, const util::SocketAddress& address) {
  if (std::find(list.begin(), list.end(), address) == list.end()) list.push_back(address);
}

bool publishable(const util::SocketAddress& address, bool listener_takes_ipv6) {
  if (address.is_wildcard() || address.is_link_local()) return false;
  return address.family() == AF_INET || listener_takes_ipv6;
}

bool is_mine(const std::vector<util::InterfaceAddress>& mine, const util::SocketAddress& address) {
  return std::any_of(mine.begin(), mine.end(), [&](const util::InterfaceAddress& interface) {
    util::SocketAddress same = interface.address;
    same.set_port(address.port());
    return same == address;
  });
}

bool on_a_shared_subnet(const std::vector<util::InterfaceAddress>& mine,
                        const util::SocketAddress& address) {
  return std::any_of(mine.begin(), mine.end(), [&](const util::InterfaceAddress& interface) {
    return !interface.loopback && util::in_subnet_of(address, interface);
  });
}

}  // namespace

std::vector<util::SocketAddress> published_candidates(
    const util::SocketAddress& route_address, const std::vector<util::InterfaceAddress>& mine,
    bool listener_takes_ipv6) {
  std::vector<util::SocketAddress> published;
  if (!route_address.is_loopback() && publishable(route_address, listener_takes_ipv6)) {
    published.push_back(route_address);
  }
  for (const util::InterfaceAddress& interface : mine) {
    if (interface.loopback || interface.address.is_loopback()) continue;
    if (publishable(interface.address, listener_takes_ipv6)) add_once(published, interface.address);
  }
  // 127.0.0.1 reaches both a dual-stack listener and an IPv4 one.
  add_once(published, util::resolve("127.0.0.1", 0));
  for (util::SocketAddress& address : published) address.set_port(0);
  return published;
}

std::vector<util::SocketAddress> order_candidates(
    const std::vector<util::InterfaceAddress>& mine,
    const std::vector<util::SocketAddress>& candidates, bool same_host) {
  // Lower tiers are tried first; within a tier, the peer's order.
  auto tier = [&](const util::SocketAddress& address) {
    if (address.is_loopback()) return same_host ? 0 : 4;
    if (!same_host && is_mine(mine, address)) return 3;
    return on_a_shared_subnet(mine, address) ? 1 : 2;
  };
  std::vector<util::SocketAddress> unique;
  for (const util::SocketAddress& address : candidates) add_once(unique, address);
  std::stable_sort(unique.begin(), unique.end(),
                   [&](const util::SocketAddress& a, const util::SocketAddress& b) {
                     return tier(a) < tier(b);
                   });
  return unique;
}

}  // namespace weft::transport
