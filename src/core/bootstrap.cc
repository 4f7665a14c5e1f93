#include "core/bootstrap.h"

#include <optional>

#include "core/peer_record.h"
#include "core/rank_directory.h"
#include "transport/path_table.h"
#include "transport/router.h"
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

// A path this rank opened, with its part in the rendezvous.
struct OpenPath {
  const transport::PathKind* kind;
  transport::PathRendezvous* rendezvous;
};

void publish_own_record(Store& store, int rank, const std::vector<OpenPath>& paths) {
  PeerRecord me;
  me.host = util::host_identity();
  for (const OpenPath& path : paths) {
    std::string card = path.rendezvous->card();
    if (!card.empty()) me.cards[path.kind->name] = std::move(card);
  }
  store.set(peer_key(rank), to_bytes(encode_peer_record(me)));
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

  // Routed from the start: a fast peer may send to us through shared memory and die while we
  // are still in the rendezvous, and what it sent must be delivered when TCP notices.
  Rendezvous result;
  result.transport = std::make_unique<transport::Router>(options.rank, options.size);
  transport::PathSetup setup;
  setup.rank = options.rank;
  setup.world_size = options.size;
  setup.job_token = handshake_key(store, options.rank);
  setup.route_hint = options.route_hint;
  setup.interfaces = util::local_interface_addresses();
  setup.events = result.transport.get();
  std::vector<OpenPath> paths;
  std::vector<std::unique_ptr<transport::PathRendezvous>> rendezvous;
  for (const transport::PathKind& kind : transport::path_kinds()) {
    transport::OpenedPath opened = kind.open(setup);
    if (!opened.path) continue;
    paths.push_back({&kind, opened.rendezvous.get()});
    rendezvous.push_back(std::move(opened.rendezvous));
    result.transport->add_path(std::move(opened.path));
  }
  publish_own_record(store, options.rank, paths);
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
  for (const OpenPath& path : paths) {
    const std::string kind = path.kind->name;
    transport::PeerDirectory peers;
    peers.rank = options.rank;
    peers.hosts = result.hosts;
    peers.cards.resize(options.size);
    for (int rank = 0; rank < options.size; ++rank) {
      if (known[rank]) peers.cards[rank] = known[rank]->card(kind);
    }
    // A weak reference: the world closes its store connection at shutdown, before the
    // transport is destroyed, and the store's server waits for that.
    peers.read_card = [weak_store = std::weak_ptr<Store>(options.store), kind](int peer) {
      std::shared_ptr<Store> reader = weak_store.lock();
      if (!reader) throw Error(ErrorCode::kAborted, "the job's store is closed");
      return parse_peer_record(to_string(reader->get(peer_key(peer))), peer).card(kind);
    };
    path.rendezvous->meet(peers);
  }
  return result;
}

}  // namespace weft::core
