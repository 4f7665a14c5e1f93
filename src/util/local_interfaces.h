// This host's IP addresses as its interfaces hold them (name, address, prefix length): what a
// rank publishes for its peers to reach it by, and what tells it which of a peer's addresses lie
// on a network it is attached to.
//
// Thread-safety: functions of values; local_interface_addresses reads the kernel's state anew at
// each call.
#pragma once

#include <string>
#include <vector>

#include "util/socket.h"

namespace weft::util {

struct InterfaceAddress {
  std::string name;       // eth0
  SocketAddress address;  // port 0
  int prefix_length = 0;  // 24 for 10.0.0.1/24
  bool loopback = false;  // the interface is a loopback one (lo)
};

// The IPv4 and IPv6 addresses of the interfaces that are up, in the kernel's order (getifaddrs',
// normally `ip addr`'s).
std::vector<InterfaceAddress> local_interface_addresses();

// Whether `address` lies in the subnet `interface` is attached to (same family, same first
// prefix_length bits). IPv4 mapped into IPv6 (::ffff:a.b.c.d) is compared as IPv4.
bool in_subnet_of(const SocketAddress& address, const InterfaceAddress& interface);

// An InterfaceAddress from text, "eth0 10.0.0.1/24" style pieces, for tests and logs.
InterfaceAddress interface_address_of(const std::string& name, const std::string& cidr,
                                      bool loopback = false);

}  // namespace weft::util
