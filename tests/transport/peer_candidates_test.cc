// Which addresses a rank publishes and in which order a peer tries them
// (transport/tcp/peer_candidates.h): pure functions, checked on made-up hosts.
#include "transport/tcp/peer_candidates.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/local_interfaces.h"
#include "util/socket.h"

namespace weft::transport {
namespace {

using util::interface_address_of;
using util::InterfaceAddress;
using util::SocketAddress;

SocketAddress at(const std::string& host, int port = 0) { return util::resolve(host, port); }

std::vector<std::string> texts(const std::vector<SocketAddress>& addresses) {
  std::vector<std::string> out;
  for (const SocketAddress& address : addresses) out.push_back(address.to_string());
  return out;
}

// A host with loopback, a management network, a fast network, a docker bridge and IPv6.
std::vector<InterfaceAddress> a_busy_host() {
  return {interface_address_of("lo", "127.0.0.1/8", true),
          interface_address_of("mgmt0", "192.168.10.5/24"),
          interface_address_of("fast0", "10.20.0.5/16"),
          interface_address_of("docker0", "172.17.0.1/16"),
          interface_address_of("lo", "::1/128", true),
          interface_address_of("fast0", "fd00:20::5/64"),
          interface_address_of("fast0", "fe80::1/64")};
}

TEST(PeerCandidates, PublishesTheRouteFirstThenEveryOtherAddressThenLoopback) {
  std::vector<SocketAddress> published =
      published_candidates(at("10.20.0.5"), a_busy_host(), /*listener_takes_ipv6=*/true);
  EXPECT_EQ(texts(published),
            (std::vector<std::string>{"10.20.0.5:0", "192.168.10.5:0", "172.17.0.1:0",
                                      "[fd00:20::5]:0", "127.0.0.1:0"}));
}

TEST(PeerCandidates, LeavesOutLinkLocalAndIpv6WhenTheListenerTakesIpv4Only) {
  std::vector<SocketAddress> published =
      published_candidates(at("192.168.10.5"), a_busy_host(), /*listener_takes_ipv6=*/false);
  EXPECT_EQ(texts(published), (std::vector<std::string>{"192.168.10.5:0", "10.20.0.5:0",
                                                        "172.17.0.1:0", "127.0.0.1:0"}));
}

TEST(PeerCandidates, AnIpv6RouteComesFirstInBrackets) {
  std::vector<InterfaceAddress> host = {interface_address_of("lo", "127.0.0.1/8", true),
                                        interface_address_of("eth0", "fd00:203::2/64")};
  EXPECT_EQ(texts(published_candidates(at("fd00:203::2"), host, true)),
            (std::vector<std::string>{"[fd00:203::2]:0", "127.0.0.1:0"}));
}

TEST(PeerCandidates, AnAddressOnASharedSubnetIsTriedFirst) {
  // Their management address comes first in what they publish, but only their fast network is
  // one we are on.
  std::vector<InterfaceAddress> mine = {interface_address_of("lo", "127.0.0.1/8", true),
                                        interface_address_of("eth0", "192.168.99.7/24"),
                                        interface_address_of("fast0", "10.20.0.5/16")};
  std::vector<SocketAddress> theirs = {at("192.168.10.6", 4000), at("10.20.1.9", 4000),
                                       at("127.0.0.1", 4000)};
  EXPECT_EQ(texts(order_candidates(mine, theirs, /*same_host=*/false)),
            (std::vector<std::string>{"10.20.1.9:4000", "192.168.10.6:4000", "127.0.0.1:4000"}));
}

TEST(PeerCandidates, SeveralOnSharedSubnetsKeepThePeersOrder) {
  std::vector<InterfaceAddress> mine = {interface_address_of("a", "10.1.0.1/16"),
                                        interface_address_of("b", "10.2.0.1/16")};
  std::vector<SocketAddress> theirs = {at("10.9.0.2", 1), at("10.2.0.2", 1), at("10.1.0.2", 1)};
  EXPECT_EQ(texts(order_candidates(mine, theirs, false)),
            (std::vector<std::string>{"10.2.0.2:1", "10.1.0.2:1", "10.9.0.2:1"}));
}

TEST(PeerCandidates, ASameHostPeerIsTriedOnLoopbackFirst) {
  std::vector<SocketAddress> theirs = {at("10.20.0.5", 4000), at("[fd00:20::5]", 4000),
                                       at("127.0.0.1", 4000)};
  EXPECT_EQ(texts(order_candidates(a_busy_host(), theirs, /*same_host=*/true)),
            (std::vector<std::string>{"127.0.0.1:4000", "10.20.0.5:4000", "[fd00:20::5]:4000"}));
}

TEST(PeerCandidates, AnotherHostsCopyOfOneOfOurAddressesComesJustBeforeLoopback) {
  // Every host with docker has 172.17.0.1: on a peer of another host it leads back here.
  std::vector<SocketAddress> theirs = {at("172.17.0.1", 4000), at("127.0.0.1", 4000),
                                       at("203.0.113.9", 4000), at("10.20.3.3", 4000)};
  EXPECT_EQ(texts(order_candidates(a_busy_host(), theirs, /*same_host=*/false)),
            (std::vector<std::string>{"10.20.3.3:4000", "203.0.113.9:4000", "172.17.0.1:4000",
                                      "127.0.0.1:4000"}));
}

TEST(PeerCandidates, DuplicatesAreTriedOnce) {
  std::vector<SocketAddress> theirs = {at("10.20.3.3", 4000), at("10.20.3.3", 4000),
                                       at("10.20.3.3", 4001)};
  EXPECT_EQ(texts(order_candidates(a_busy_host(), theirs, false)),
            (std::vector<std::string>{"10.20.3.3:4000", "10.20.3.3:4001"}));
}

TEST(PeerCandidates, Ipv6SubnetsCountToo) {
  std::vector<SocketAddress> theirs = {at("192.0.2.1", 7), at("fd00:20::9", 7)};
  EXPECT_EQ(texts(order_candidates(a_busy_host(), theirs, false)),
            (std::vector<std::string>{"[fd00:20::9]:7", "192.0.2.1:7"}));
}

TEST(LocalInterfaces, SubnetMembershipFollowsThePrefixLength) {
  InterfaceAddress slash20 = interface_address_of("eth0", "10.0.16.1/20");
  EXPECT_TRUE(util::in_subnet_of(at("10.0.31.255"), slash20));
  EXPECT_FALSE(util::in_subnet_of(at("10.0.32.0"), slash20));
  EXPECT_FALSE(util::in_subnet_of(at("fd00::1"), slash20));
  // An IPv4 peer seen through a dual-stack socket is still IPv4.
  EXPECT_TRUE(util::in_subnet_of(at("::ffff:10.0.17.3"), slash20));
  InterfaceAddress v6 = interface_address_of("eth0", "fd00:203::1/64");
  EXPECT_TRUE(util::in_subnet_of(at("fd00:203::ffff:1"), v6));
  EXPECT_FALSE(util::in_subnet_of(at("fd00:204::1"), v6));
}

TEST(LocalInterfaces, ThisHostHasLoopbackUp) {
  bool found = false;
  for (const InterfaceAddress& interface : util::local_interface_addresses()) {
    if (interface.loopback && interface.address.to_string() == "127.0.0.1:0") found = true;
  }
  EXPECT_TRUE(found);
}

TEST(SocketAddressText, Ipv6InBracketsAndMappedIpv4AsIpv4) {
  EXPECT_EQ(at("fd00::1", 80).to_string(), "[fd00::1]:80");
  EXPECT_EQ(at("[fd00::1]", 80).to_string(), "[fd00::1]:80");
  EXPECT_EQ(at("::ffff:10.1.2.3", 80).to_string(), "10.1.2.3:80");
  EXPECT_TRUE(at("::ffff:127.0.0.1", 80).is_loopback());
  EXPECT_TRUE(at("fe80::1", 0).is_link_local());
  EXPECT_FALSE(at("fd00::1", 0).is_link_local());
  EXPECT_TRUE(at("::", 0).is_wildcard());
  EXPECT_TRUE(at("0.0.0.0", 0).is_wildcard());
  EXPECT_TRUE(at("127.0.0.1", 5) == at("127.0.0.1", 5));
  EXPECT_FALSE(at("127.0.0.1", 5) == at("127.0.0.1", 6));
}

TEST(SocketAddressText, EveryAddressListenerTakesIpv4Too) {
  util::SocketAddress every = util::every_address(0);
  util::Fd listener = util::listen_on(every, /*non_blocking=*/false);
  util::SocketAddress bound = util::local_address_of(listener.get());
  util::Fd client = util::connect_with_deadline(
      at("127.0.0.1", bound.port()), std::chrono::steady_clock::now() + std::chrono::seconds(5));
  EXPECT_TRUE(client.valid()) << "an IPv4 client could not reach " << bound.to_string();
}

}  // namespace
}  // namespace weft::transport
