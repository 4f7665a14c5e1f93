#include "transport/tcp/tcp_path_kind.h"

#include "transport/tcp/congestion_control.h"
#include "transport/tcp/listen_plan.h"
#include "transport/tcp/peer_candidates.h"
#include "transport/tcp/streams.h"
#include "transport/tcp/tcp_path.h"
#include "transport/tcp/zerocopy.h"
#include "util/log.h"
#include "util/settings.h"
#include "weft/error.h"

namespace weft::transport {

namespace {

std::string address_list(const std::vector<util::SocketAddress>& addresses) {
  std::string text;
  for (const util::SocketAddress& address : addresses) {
    text += (text.empty() ? "" : ", ") + address.to_string();
  }
  return text;
}

class TcpRendezvous final : public PathRendezvous {
 public:
  TcpRendezvous(TcpPath& path, const PathSetup& setup, const ListenPlan& plan)
      : path_(path),
        rank_(setup.rank),
        interfaces_(setup.interfaces),
        published_(addresses_to_publish(plan, path.listen_addresses())) {
    util::log_info(util::Subsys::kInit, [&] {
      return "rank " + std::to_string(setup.rank) + "/" + std::to_string(setup.world_size) +
             " listens on " + address_list(path.listen_addresses()) + " (" + plan.why +
             ") and publishes " + address_list(published_);
    });
  }

  std::string card() const override { return encode_address_card(published_); }

  void meet(const PeerDirectory& peers) override {
    std::vector<std::vector<util::SocketAddress>> candidates(peers.hosts.size());
    for (std::size_t rank = 0; rank < peers.hosts.size(); ++rank) {
      const int peer = static_cast<int>(rank);
      if (!peers.cards[rank]) continue;
      candidates[rank] = order_candidates(interfaces_, parse_address_card(*peers.cards[rank], peer),
                                          peers.same_host(peer));
    }
    path_.set_peer_candidates(std::move(candidates));
    path_.set_peer_lookup([read_card = peers.read_card, interfaces = interfaces_,
                           me = rank_](int peer) {
      util::log_debug(util::Subsys::kInit, [&] {
        return "rank " + std::to_string(me) + " reads the record of rank " + std::to_string(peer);
      });
      std::optional<std::string> card = read_card(peer);
      return order_candidates(interfaces, parse_address_card(card.value_or(""), peer),
                              /*same_host=*/false);
    });
  }

 private:
  TcpPath& path_;
  const int rank_;
  const std::vector<util::InterfaceAddress> interfaces_;
  const std::vector<util::SocketAddress> published_;
};

}  // namespace

OpenedPath open_tcp_path(const PathSetup& setup) {
  const ListenPlan plan = plan_listening(setup.route_hint, setup.interfaces);
  TcpPathOptions options;
  options.rank = setup.rank;
  options.world_size = setup.world_size;
  options.job_token = setup.job_token;
  options.listen_address = plan.bind.front();
  options.more_listen_addresses.assign(plan.bind.begin() + 1, plan.bind.end());
  options.handshake_timeout = util::setting_duration("WEFT_HANDSHAKE_TIMEOUT");
  options.congestion_control =
      resolve_congestion_control(util::setting_string("WEFT_SOCKET_CONGESTION"));
  options.streams = parse_stream_setting(util::setting_string("WEFT_SOCKET_NSTREAMS"));
  options.zerocopy = parse_zerocopy_setting(util::setting_string("WEFT_SOCKET_ZEROCOPY"));
  auto path = std::make_unique<TcpPath>(options, *setup.events);
  auto rendezvous = std::make_unique<TcpRendezvous>(*path, setup, plan);
  return {std::move(path), std::move(rendezvous)};
}

std::string encode_address_card(const std::vector<util::SocketAddress>& addresses) {
  std::string card;
  for (const util::SocketAddress& address : addresses) {
    card += (card.empty() ? "" : ",") + address.to_string();
  }
  return card;
}

std::vector<util::SocketAddress> parse_address_card(const std::string& card, int rank) {
  const std::string what = "the TCP addresses of rank " + std::to_string(rank);
  std::vector<util::SocketAddress> addresses;
  std::size_t begin = 0;
  while (begin <= card.size()) {
    std::size_t end = card.find(',', begin);
    if (end == std::string::npos) end = card.size();
    const std::string text = card.substr(begin, end - begin);
    begin = end + 1;
    if (text.empty()) continue;
    try {
      auto [host, port] = util::split_host_port(text, what);
      addresses.push_back(util::resolve(host, port));
    } catch (const Error& e) {
      throw Error(ErrorCode::kInvalidArgument,
                  what + " have one that is not host:port ('" + text + "'): " + e.message());
    }
  }
  if (addresses.empty()) {
    throw Error(ErrorCode::kInvalidArgument, what + " name no address: '" + card + "'");
  }
  return addresses;
}

}  // namespace weft::transport
