#include "core/bootstrap.h"

#include <optional>

#include "core/peer_record.h"
#include "transport/routed_transport.h"
#include "transport/tcp/peer_candidates.h"
#include "util/deadline.h"
#include "util/host_identity.h"
#include "util/log.h"
#include "util/random_token.h"
#include "util/settings.h"

namespace weft::core {

namespace {

// Without WEFT_JOB_TOKEN, rank 0 publishes a random job id here for the others.
const std::string kJobIdKey = "weft/job_id";

std::string peer_key(int rank) { return "weft/peer/" + std::to_string(rank); }

// The secret the transports' handshakes are keyed with. With WEFT_JOB_TOKEN: the token, which
// is never written anywhere (the store proved it knows it too). Without: there is no shared
// secret, and a random job id from rank 0, readable by anyone who reaches the store, stands in
// for one. It keeps two jobs that meet by accident (a reused port, a stale address) apart;
// it does not keep out anyone who wants in (docs/RELIABILITY.md, "Authentication").
std::string handshake_key(Store& store, int rank) {
  std::string token = util::setting_string("WEFT_JOB_TOKEN");
  if (!token.empty()) return token;
  if (rank == 0) {
    std::string job_id = util::random_hex(16);
    store.set(kJobIdKey, to_bytes(job_id));
    return job_id;
  }
  return to_string(store.get(kJobIdKey));
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

// Shared memory between same-host ranks, unless WEFT_TRANSPORT=tcp or the kernel refuses.
std::unique_ptr<transport::ShmTransport> make_shm_transport(const WorldOptions& options,
                                                            const std::string& job_token,
                                                            transport::MessageSink& sink) {
  if (util::setting_choice("WEFT_TRANSPORT") == "tcp" || options.size < 2) return nullptr;
  transport::ShmTransportOptions shm_options;
  shm_options.rank = options.rank;
  shm_options.world_size = options.size;
  shm_options.job_token = job_token;
  shm_options.single_copy = util::setting_choice("WEFT_SHM_SINGLE_COPY") != "off";
  try {
    return std::make_unique<transport::ShmTransport>(shm_options, sink);
  } catch (const Error& e) {
    util::log_info(util::Subsys::kShm, [&] {
      return "rank " + std::to_string(options.rank) + ": no shared memory for messages (" +
             e.message() + "); TCP only";
    });
    return nullptr;
  }
}

}  // namespace

ListenPlan plan_listening(const std::string& route_hint,
                          const std::vector<util::InterfaceAddress>& interfaces) {
  std::string ifname = util::setting_string("WEFT_SOCKET_IFNAME");
  if (!ifname.empty()) {
    util::SocketAddress chosen = util::interface_address(ifname);
    return {chosen, {chosen}, "WEFT_SOCKET_IFNAME"};
  }
  util::SocketAddress loopback = util::resolve("127.0.0.1", 0);
  if (route_hint.empty()) return {loopback, {loopback}, "no rendezvous host: this host only"};
  util::SocketAddress route;
  try {
    route = util::local_address_towards(route_hint);
  } catch (const Error& e) {
    util::log_warn(util::Subsys::kInit, [&] {
      return "no route to " + route_hint + " (" + e.message() + "); listening on loopback";
    });
    return {loopback, {loopback}, "no route to the rendezvous host"};
  }
  if (route.is_loopback()) return {route, {route}, "a loopback job: this host only"};
  util::SocketAddress every = util::every_address(0);
  return {every, transport::published_candidates(route, interfaces, every.family() == AF_INET6),
          "every address; the route to " + route_hint + " first"};
}

Rendezvous rendezvous_with_peers(const WorldOptions& options) {
  // Read here so that a typo is an error at init, not at the first collective.
  util::setting_choice("WEFT_TRANSPORT");
  util::setting_choice("WEFT_SHM_SINGLE_COPY");
  Store& store = *options.store;
  auto deadline = util::deadline_after(options.timeout);
  store.set_timeout(options.timeout);

  transport::TcpTransportOptions transport_options;
  transport_options.rank = options.rank;
  transport_options.world_size = options.size;
  transport_options.job_token = handshake_key(store, options.rank);
  const std::vector<util::InterfaceAddress> interfaces = util::local_interface_addresses();
  const ListenPlan plan = plan_listening(options.route_hint, interfaces);
  transport_options.listen_address = plan.bind;
  transport_options.handshake_timeout = util::setting_duration("WEFT_HANDSHAKE_TIMEOUT");
  auto tcp_transport = std::make_unique<transport::TcpTransport>(transport_options);
  std::unique_ptr<transport::ShmTransport> shm_transport =
      make_shm_transport(options, transport_options.job_token, *tcp_transport);
  // Routed from the start: a fast peer may send to us through shared memory and die while we
  // are still in the rendezvous, and what it sent must be delivered when TCP notices.
  Rendezvous result;
  result.transport = std::make_unique<transport::RoutedTransport>(std::move(tcp_transport),
                                                                  std::move(shm_transport));
  transport::TcpTransport& tcp = result.transport->tcp();
  transport::ShmTransport* shm = result.transport->shm();

  PeerRecord me;
  for (util::SocketAddress address : plan.published) {
    address.set_port(tcp.listen_address().port());
    me.addresses.push_back(address);
  }
  me.host = util::host_identity();
  if (shm) me.mailbox = shm->address().to_string();
  store.set(peer_key(options.rank), to_bytes(encode_peer_record(me)));
  util::log_info(util::Subsys::kInit, [&] {
    std::string published;
    for (const util::SocketAddress& address : me.addresses) {
      published += (published.empty() ? "" : ", ") + address.to_string();
    }
    return "rank " + std::to_string(options.rank) + "/" + std::to_string(options.size) +
           " listens on " + tcp.listen_address().to_string() + " (" + plan.why +
           ") and publishes " + published;
  });

  std::vector<std::string> keys;
  for (int rank = 0; rank < options.size; ++rank) keys.push_back(peer_key(rank));
  try {
    store.wait(keys, util::time_left(deadline));
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kTimeout) throw;
    throw_missing_ranks(store, options.size, options.timeout);
  }
  std::vector<Bytes> values = store.multi_get(keys);
  std::vector<PeerRecord> records;
  for (int rank = 0; rank < options.size; ++rank) {
    records.push_back(parse_peer_record(to_string(values[rank]), rank));
    result.hosts.push_back(records.back().host);
  }
  std::vector<std::vector<util::SocketAddress>> candidates;
  std::vector<std::optional<transport::MailboxAddress>> mailboxes(options.size);
  for (int rank = 0; rank < options.size; ++rank) {
    bool same_host = result.hosts[rank] == result.hosts[options.rank];
    candidates.push_back(
        transport::order_candidates(interfaces, records[rank].addresses, same_host));
    transport::MailboxAddress mailbox;
    if (transport::MailboxAddress::parse(records[rank].mailbox, &mailbox))
      mailboxes[rank] = mailbox;
  }
  tcp.set_peer_candidates(std::move(candidates));
  if (shm) {
    // Only ranks of this host are reached through shared memory.
    for (int rank = 0; rank < options.size; ++rank) {
      if (result.hosts[rank] != result.hosts[options.rank]) mailboxes[rank].reset();
    }
    shm->set_local_peers(mailboxes);
  }
  return result;
}

}  // namespace weft::core
