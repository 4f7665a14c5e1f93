// The rendezvous of a job through its store: every rank listens, publishes its address and
// host identity, and learns everybody's, within one deadline.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/world.h"
#include "transport/routed_transport.h"

namespace weft::core {

struct Rendezvous {
  std::unique_ptr<transport::RoutedTransport> transport;
  std::vector<std::string> hosts;  // host identity per rank
};

Rendezvous rendezvous_with_peers(const WorldOptions& options);

// The address this rank listens on: WEFT_SOCKET_IFNAME's, else the one routed towards
// route_hint, else loopback.
util::SocketAddress choose_listen_address(const std::string& route_hint);

}  // namespace weft::core
