// Where a rank's TCP path listens, and which addresses it publishes for peers to reach it by.
//
// - WEFT_SOCKET_IFNAME set: on every address of the interfaces it chooses (a listener each),
//   published in the filter's choice order;
// - a loopback job (the rendezvous host is loopback) or no rendezvous host (a store given by the
//   program, file://): on loopback only, out of reach of other machines;
// - otherwise on every address ([::], dual stack), publishing the candidates of
//   peer_candidates.h; each peer learns which one reaches us by connecting.
//
// Thread-safety: functions; plan_listening reads the settings and the kernel's routes.
#pragma once

#include <string>
#include <vector>

#include "util/local_interfaces.h"
#include "util/socket.h"

namespace weft::transport {

struct ListenPlan {
  std::vector<util::SocketAddress> bind;       // port 0, a listener each
  std::vector<util::SocketAddress> published;  // port 0, best first; bind itself when several
  std::string why;                             // how it was chosen, for the INFO log
};

// Where this rank listens and what it publishes (above); route_hint is the rendezvous host.
ListenPlan plan_listening(const std::string& route_hint,
                          const std::vector<util::InterfaceAddress>& interfaces);
// The plan's published addresses with the ports the listeners got (`bound`, in the plan's order).
std::vector<util::SocketAddress> addresses_to_publish(
    const ListenPlan& plan, const std::vector<util::SocketAddress>& bound);

}  // namespace weft::transport
