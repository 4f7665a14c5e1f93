#include "core/bootstrap.h"

#include "util/deadline.h"
#include "util/host_identity.h"
#include "util/log.h"
#include "util/random_token.h"
#include "util/settings.h"

namespace weft::core {

namespace {

const std::string kTokenKey = "weft/job_token";

std::string peer_key(int rank) { return "weft/peer/" + std::to_string(rank); }

// The job token: WEFT_JOB_TOKEN, else one rank 0 makes and shares through the store.
std::string job_token(Store& store, int rank) {
  std::string token = util::setting_string("WEFT_JOB_TOKEN");
  if (!token.empty()) return token;
  if (rank == 0) {
    token = util::random_hex(16);
    store.set(kTokenKey, to_bytes(token));
    return token;
  }
  return to_string(store.get(kTokenKey));
}

[[noreturn]] void throw_missing_ranks(Store& store, int size, std::chrono::milliseconds timeout) {
  std::string missing;
  int count = 0;
  for (int rank = 0; rank < size; ++rank) {
    if (store.check({peer_key(rank)})) continue;
    if (count++ < 16) missing += (missing.empty() ? "" : ", ") + std::to_string(rank);
  }
  if (count > 16) missing += ", ...";
  throw Error(ErrorCode::kTimeout,
              "rendezvous: " + std::to_string(count) + " of " + std::to_string(size) +
                  " ranks did not join within " + std::to_string(timeout.count()) +
                  " ms (missing: " + missing + ")",
              ErrorContext{.op = "init_process_group"});
}

}  // namespace

util::SocketAddress choose_listen_address(const std::string& route_hint) {
  std::string ifname = util::setting_string("WEFT_SOCKET_IFNAME");
  if (!ifname.empty()) return util::interface_address(ifname);
  if (!route_hint.empty()) {
    try {
      return util::local_address_towards(route_hint);
    } catch (const Error& e) {
      util::log_warn("no route to " + route_hint + " (" + e.message() + "); listening on loopback");
    }
  }
  return util::resolve("127.0.0.1", 0);
}

Rendezvous rendezvous_with_peers(const WorldOptions& options) {
  // Read here so that a typo is an error at init, not at the first collective.
  util::setting_choice("WEFT_TRANSPORT");
  Store& store = *options.store;
  auto deadline = util::deadline_after(options.timeout);
  store.set_timeout(options.timeout);

  transport::TcpTransportOptions transport_options;
  transport_options.rank = options.rank;
  transport_options.world_size = options.size;
  transport_options.job_token = job_token(store, options.rank);
  transport_options.listen_address = choose_listen_address(options.route_hint);
  transport_options.handshake_timeout = util::setting_duration("WEFT_HANDSHAKE_TIMEOUT");
  Rendezvous result;
  result.transport = std::make_unique<transport::TcpTransport>(transport_options);

  std::string me = result.transport->listen_address().to_string() + "\n" + util::host_identity();
  store.set(peer_key(options.rank), to_bytes(me));
  util::log_info("rank " + std::to_string(options.rank) + "/" + std::to_string(options.size) +
                 " listens on " + result.transport->listen_address().to_string());

  std::vector<std::string> keys;
  for (int rank = 0; rank < options.size; ++rank) keys.push_back(peer_key(rank));
  try {
    store.wait(keys, util::time_left(deadline));
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kTimeout) throw;
    throw_missing_ranks(store, options.size, options.timeout);
  }
  std::vector<Bytes> values = store.multi_get(keys);
  std::vector<util::SocketAddress> addresses;
  for (int rank = 0; rank < options.size; ++rank) {
    std::string text = to_string(values[rank]);
    auto newline = text.find('\n');
    auto [host, port] = util::split_host_port(text.substr(0, newline), peer_key(rank));
    addresses.push_back(util::resolve(host, port));
    result.hosts.push_back(newline == std::string::npos ? "" : text.substr(newline + 1));
  }
  result.transport->set_peer_addresses(std::move(addresses));
  return result;
}

}  // namespace weft::core
