#include "core/bootstrap.h"

#include <optional>

#include "core/peer_record.h"
#include "core/rank_directory.h"
#include "transport/router.h"
#include "transport/shm/shm_path.h"
#include "transport/tcp/congestion_control.h"
#include "transport/tcp/peer_candidates.h"
#include "transport/tcp/streams.h"
#include "transport/tcp/tcp_path.h"
#include "transport/tcp/zerocopy.h"
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
// Rank 0 writes it once every rank's record is in (core/rank_directory.h).
const std::string kDirectoryKey = "weft/directory";

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
std::unique_ptr<transport::ShmPath> make_shm_path(const WorldOptions& options,
                                                  const std::string& job_token,
                                                  transport::PathEvents& events) {
  if (util::setting_choice("WEFT_TRANSPORT") == "tcp" || options.size < 2) return nullptr;
  transport::ShmPathOptions shm_options;
  shm_options.rank = options.rank;
  shm_options.world_size = options.size;
  shm_options.job_token = job_token;
  shm_options.single_copy = util::setting_choice("WEFT_SHM_SINGLE_COPY") != "off";
  try {
    return std::make_unique<transport::ShmPath>(shm_options, events);
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
          transport::published_candidates(route, interfaces, every.family() == AF_INET6),
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

namespace {

std::unique_ptr<transport::TcpPath> make_tcp_path(const WorldOptions& options,
                                                  const ListenPlan& plan, std::string job_token,
                                                  transport::PathEvents& events) {
  transport::TcpPathOptions transport_options;
  transport_options.rank = options.rank;
  transport_options.world_size = options.size;
  transport_options.job_token = std::move(job_token);
  transport_options.listen_address = plan.bind.front();
  transport_options.more_listen_addresses.assign(plan.bind.begin() + 1, plan.bind.end());
  transport_options.handshake_timeout = util::setting_duration("WEFT_HANDSHAKE_TIMEOUT");
  transport_options.congestion_control =
      transport::resolve_congestion_control(util::setting_string("WEFT_SOCKET_CONGESTION"));
  transport_options.streams =
      transport::parse_stream_setting(util::setting_string("WEFT_SOCKET_NSTREAMS"));
  transport_options.zerocopy =
      transport::parse_zerocopy_setting(util::setting_string("WEFT_SOCKET_ZEROCOPY"));
  return std::make_unique<transport::TcpPath>(transport_options, events);
}

void publish_own_record(Store& store, const WorldOptions& options, const ListenPlan& plan,
                        const transport::TcpPath& tcp, const transport::ShmPath* shm) {
  PeerRecord me;
  me.addresses = addresses_to_publish(plan, tcp.listen_addresses());
  me.host = util::host_identity();
  if (shm) me.mailbox = shm->address().to_string();
  store.set(peer_key(options.rank), to_bytes(encode_peer_record(me)));
  util::log_info(util::Subsys::kInit, [&] {
    std::string listening;
    for (const util::SocketAddress& address : tcp.listen_addresses()) {
      listening += (listening.empty() ? "" : ", ") + address.to_string();
    }
    std::string published;
    for (const util::SocketAddress& address : me.addresses) {
      published += (published.empty() ? "" : ", ") + address.to_string();
    }
    return "rank " + std::to_string(options.rank) + "/" + std::to_string(options.size) +
           " listens on " + listening + " (" + plan.why + ") and publishes " + published;
  });
}

struct JobDirectory {
  std::vector<std::string> hosts;   // every rank's
  std::vector<PeerRecord> records;  // rank 0: every rank's; the others: none
};

// Every rank's host, from the directory rank 0 writes once every record is in: rank 0 alone
// reads all the records.
JobDirectory read_job_directory(Store& store, const WorldOptions& options,
                                util::Clock::time_point deadline) {
  std::vector<std::string> keys;
  if (options.rank == 0) {
    for (int rank = 0; rank < options.size; ++rank) keys.push_back(peer_key(rank));
  } else {
    keys.push_back(kDirectoryKey);
  }
  try {
    store.wait(keys, util::time_left(deadline));
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kTimeout) throw;
    throw_missing_ranks(store, options.size, options.timeout);
  }
  JobDirectory directory;
  if (options.rank != 0) {
    directory.hosts = parse_rank_directory(to_string(store.get(kDirectoryKey)), options.size);
    return directory;
  }
  std::vector<Bytes> values = store.multi_get(keys);
  for (int rank = 0; rank < options.size; ++rank) {
    directory.records.push_back(parse_peer_record(to_string(values[rank]), rank));
    directory.hosts.push_back(directory.records.back().host);
  }
  store.set(kDirectoryKey, to_bytes(encode_rank_directory(directory.hosts)));
  return directory;
}

}  // namespace

Rendezvous rendezvous_with_peers(const WorldOptions& options) {
  // Read here so that a typo is an error at init, not at the first collective.
  util::setting_choice("WEFT_TRANSPORT");
  util::setting_choice("WEFT_SHM_SINGLE_COPY");
  Store& store = *options.store;
  auto deadline = util::deadline_after(options.timeout);
  store.set_timeout(options.timeout);

  const std::string job_token = handshake_key(store, options.rank);
  const std::vector<util::InterfaceAddress> interfaces = util::local_interface_addresses();
  const ListenPlan plan = plan_listening(options.route_hint, interfaces);
  // Routed from the start: a fast peer may send to us through shared memory and die while we
  // are still in the rendezvous, and what it sent must be delivered when TCP notices.
  Rendezvous result;
  result.transport = std::make_unique<transport::Router>(options.rank, options.size);
  auto tcp_path = make_tcp_path(options, plan, job_token, *result.transport);
  auto shm_path = make_shm_path(options, job_token, *result.transport);
  transport::TcpPath& tcp = *tcp_path;
  transport::ShmPath* shm = shm_path.get();
  if (shm_path) result.transport->add_path(std::move(shm_path));
  result.transport->add_path(std::move(tcp_path));
  publish_own_record(store, options, plan, tcp, shm);
  JobDirectory directory = read_job_directory(store, options, deadline);
  result.hosts = directory.hosts;

  // The records of this host's ranks are read now (shared memory needs their mailboxes); the
  // others' when first talked to, so that a rank reads the records of the peers it talks to.
  const std::string& my_host = result.hosts[options.rank];
  std::vector<std::optional<PeerRecord>> known(options.size);
  std::vector<std::string> same_host_keys;
  for (int rank = 0; rank < options.size; ++rank) {
    if (!directory.records.empty()) {
      known[rank] = std::move(directory.records[rank]);
    } else if (result.hosts[rank] == my_host) {
      same_host_keys.push_back(peer_key(rank));
    }
  }
  if (!same_host_keys.empty()) {
    std::vector<Bytes> values = store.multi_get(same_host_keys);
    for (int rank = 0, i = 0; rank < options.size; ++rank) {
      if (result.hosts[rank] == my_host)
        known[rank] = parse_peer_record(to_string(values[i++]), rank);
    }
  }
  std::vector<std::vector<util::SocketAddress>> candidates(options.size);
  std::vector<std::optional<transport::MailboxAddress>> mailboxes(options.size);
  for (int rank = 0; rank < options.size; ++rank) {
    if (!known[rank]) continue;
    const bool same_host = result.hosts[rank] == my_host;
    candidates[rank] = transport::order_candidates(interfaces, known[rank]->addresses, same_host);
    transport::MailboxAddress mailbox;
    // Only ranks of this host are reached through shared memory.
    if (same_host && transport::MailboxAddress::parse(known[rank]->mailbox, &mailbox)) {
      mailboxes[rank] = mailbox;
    }
  }
  tcp.set_peer_candidates(std::move(candidates));
  // A weak reference: the world closes its store connection at shutdown, before the transport
  // is destroyed, and the store's server waits for that.
  std::weak_ptr<Store> weak_store = options.store;
  tcp.set_peer_lookup([weak_store, interfaces, me = options.rank](int peer) {
    std::shared_ptr<Store> reader = weak_store.lock();
    if (!reader) throw Error(ErrorCode::kAborted, "the job's store is closed");
    util::log_debug(util::Subsys::kInit, [&] {
      return "rank " + std::to_string(me) + " reads the record of rank " + std::to_string(peer);
    });
    PeerRecord record = parse_peer_record(to_string(reader->get(peer_key(peer))), peer);
    return transport::order_candidates(interfaces, record.addresses, /*same_host=*/false);
  });
  if (shm) shm->set_local_peers(mailboxes);
  return result;
}

}  // namespace weft::core
