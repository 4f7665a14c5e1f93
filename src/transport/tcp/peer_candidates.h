// Which addresses a rank publishes for its peers to reach it by, and in which order a peer tries
// them: pure functions of the interfaces and addresses given, so that every rule is unit-tested
// without a network.
//
// A rank that listens on every address of its host (no WEFT_SOCKET_IFNAME, not a loopback job)
// publishes every address a peer of another host might reach it by; which one works is learned
// by connecting (candidate_dial.h), since only the handshake proves that an address leads to the
// right rank of the right job.
//
// Thread-safety: functions of values.
#pragma once

#include <vector>

#include "util/local_interfaces.h"
#include "util/socket.h"

namespace weft::transport {

// The addresses to publish, port 0, best first: `route_address` (the one the kernel uses towards
// the rendezvous host, usually the network the job was started on), then the other addresses of
// the non-loopback interfaces in the kernel's order, then loopback last, for same-host peers.
// IPv6 link-local addresses are left out (a peer cannot name our interface's scope), and IPv6
// ones altogether when the listener takes IPv4 only (`listener_takes_ipv6` false).
std::vector<util::SocketAddress> published_candidates(
    const util::SocketAddress& route_address, const std::vector<util::InterfaceAddress>& mine,
    bool listener_takes_ipv6);

// The order in which to try a peer's published `candidates` (its order, duplicates dropped):
// - a peer of this host (same host identity) is tried on loopback first: no network can fail
//   between two processes of one kernel;
// - then the addresses in a subnet one of `mine` (non-loopback) is attached to: a network both
//   hosts are on, reached without a router;
// - then the others, in the peer's order;
// - for a peer of another host, an address that is also one of ours (a docker bridge's
//   172.17.0.1 exists on every host) after those, and loopback last: both lead to this host,
//   where the handshake would only find another process.
std::vector<util::SocketAddress> order_candidates(
    const std::vector<util::InterfaceAddress>& mine,
    const std::vector<util::SocketAddress>& candidates, bool same_host);

}  // namespace weft::transport
