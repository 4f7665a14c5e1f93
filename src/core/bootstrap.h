// The rendezvous of a job through its store: every rank listens, publishes its addresses and
// host identity (core/peer_record.h), and learns everybody's, within one deadline.
//
// Where a rank listens (plan_listening):
// - WEFT_SOCKET_IFNAME set: on the address of the interface it chooses, published alone;
// - a loopback job (the rendezvous host is loopback) or no rendezvous host (a store given by the
//   program, file://): on loopback only, out of reach of other machines;
// - otherwise on every address ([::], dual stack), publishing the candidates of
//   transport/tcp/peer_candidates.h; each peer learns which one reaches us by connecting.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/world.h"
#include "transport/routed_transport.h"
#include "util/local_interfaces.h"

namespace weft::core {

struct Rendezvous {
  std::unique_ptr<transport::RoutedTransport> transport;
  std::vector<std::string> hosts;  // host identity per rank
};

Rendezvous rendezvous_with_peers(const WorldOptions& options);

struct ListenPlan {
  util::SocketAddress bind;                    // port 0
  std::vector<util::SocketAddress> published;  // port 0, best first
  std::string why;                             // how it was chosen, for the INFO log
};

// Where this rank listens and what it publishes (above); route_hint is the rendezvous host.
ListenPlan plan_listening(const std::string& route_hint,
                          const std::vector<util::InterfaceAddress>& interfaces);

}  // namespace weft::core
