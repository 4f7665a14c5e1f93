#include "transport/tcp/listen_plan.h"

#include "transport/tcp/peer_candidates.h"
#include "util/log.h"
#include "util/settings.h"
#include "weft/error.h"

namespace weft::transport {

ListenPlan plan_listening(const std::string& route_hint,
                          const std::vector<util::InterfaceAddress>& interfaces) {
  std::string ifname = util::setting_string("WEFT_SOCKET_IFNAME");
  if (!ifname.empty()) {
    std::vector<util::SocketAddress> chosen = util::interface_addresses(ifname);
    return {chosen, chosen, "WEFT_SOCKET_IFNAME"};
  }
  util::SocketAddress loopback = util::resolve("127.0.0.1", 0);
  if (route_hint.empty()) return {{loopback}, {loopback}, "no rendezvous host: this host only"};
  util::SocketAddress route;
  try {
    route = util::local_address_towards(route_hint);
  } catch (const Error& e) {
    util::log_warn(util::Subsys::kInit, [&] {
      return "no route to " + route_hint + " (" + e.message() + "); listening on loopback";
    });
    return {{loopback}, {loopback}, "no route to the rendezvous host"};
  }
  if (route.is_loopback()) return {{route}, {route}, "a loopback job: this host only"};
  util::SocketAddress every = util::every_address(0);
  return {{every},
          published_candidates(route, interfaces, every.family() == AF_INET6),
          "every address; the route to " + route_hint + " first"};
}

std::vector<util::SocketAddress> addresses_to_publish(
    const ListenPlan& plan, const std::vector<util::SocketAddress>& bound) {
  std::vector<util::SocketAddress> published;
  for (std::size_t i = 0; i < plan.published.size(); ++i) {
    util::SocketAddress address = plan.published[i];
    address.set_port(bound[plan.bind.size() == 1 ? 0 : i].port());
    published.push_back(address);
  }
  return published;
}

}  // namespace weft::transport
