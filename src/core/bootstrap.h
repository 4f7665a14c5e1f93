// The rendezvous of a job through its store: every rank listens and publishes its addresses,
// host identity and mailbox (core/peer_record.h); rank 0, once every record is in, publishes
// which host every rank is on (core/rank_directory.h); every rank then reads the records of the
// ranks on its own host, and another rank's only when it first talks to it. All within one
// deadline.
//
// Where a rank listens (plan_listening):
// - WEFT_SOCKET_IFNAME set: on every address of the interfaces it chooses (a listener each),
//   published in the filter's choice order;
// - a loopback job (the rendezvous host is loopback) or no rendezvous host (a store given by the
//   program, file://): on loopback only, out of reach of other machines;
// - otherwise on every address ([::], dual stack), publishing the candidates of
//   transport/tcp/peer_candidates.h; each peer learns which one reaches us by connecting.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/world.h"
#include "transport/router.h"
#include "util/local_interfaces.h"

namespace weft::core {

struct Rendezvous {
  std::unique_ptr<transport::Router> transport;
  std::vector<std::string> hosts;  // host identity per rank
};

Rendezvous rendezvous_with_peers(const WorldOptions& options);

struct ListenPlan {
  std::vector<util::SocketAddress> bind;  // port 0, a listener each
  std::vector<util::SocketAddress>
      published;    // port 0, best first; bind itself when it has several
  std::string why;  // how it was chosen, for the INFO log
};

// Where this rank listens and what it publishes (above); route_hint is the rendezvous host.
ListenPlan plan_listening(const std::string& route_hint,
                          const std::vector<util::InterfaceAddress>& interfaces);
// The plan's published addresses with the ports the listeners got (`bound`, in the plan's order).
std::vector<util::SocketAddress> addresses_to_publish(
    const ListenPlan& plan, const std::vector<util::SocketAddress>& bound);

}  // namespace weft::core
