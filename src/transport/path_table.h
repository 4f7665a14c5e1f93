// The table of path kinds — every way this rank may carry messages, in order of preference (as
// NCCL's transport table): the first path that reaches a peer carries its messages. The
// rendezvous (core/bootstrap.h) opens every kind through this table and never names one.
//
// How a kind joins a job, through the job's store, which this layer never touches itself:
//   1. open(): the path is made for this rank (listening, mapping a mailbox), or not at all
//      where it cannot serve here (a setting rules it out, the kernel or the fabric refuses);
//   2. its card (PathRendezvous::card) is published in this rank's record, under the kind's
//      name: what a peer needs to reach us this way (TCP's addresses, the mailbox's name);
//   3. once every rank's host is known, meet() hands it the cards read so far (this host's
//      ranks', or every rank's on rank 0) and a way to read any other rank's card later, on
//      first use (connections are made on first use, never all-to-all at start-up).
// Adding a path is a new directory with an open function, and a row in path_table.cc.
//
// Thread-safety: path_kinds() is a constant table; each PathRendezvous is used by the thread
// that runs the rendezvous, but read_card, which the path may call from any thread later.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "transport/path.h"
#include "transport/streamed_arrivals.h"
#include "util/local_interfaces.h"

namespace weft::transport {

// What every kind is told when this rank opens its paths.
struct PathSetup {
  int rank = 0;
  int world_size = 1;
  std::string job_token;   // the secret every handshake is keyed with
  std::string route_hint;  // the rendezvous host, whose route picks our interface; may be empty
  std::vector<util::InterfaceAddress> interfaces;  // this host's
  StreamedArrivalEvents* events = nullptr;         // the Router the path reports to
};

// What a kind learns of the other ranks once the rendezvous knows every rank's host.
struct PeerDirectory {
  int rank = 0;
  std::vector<std::string> hosts;  // host identity per rank
  // This kind's card of each rank, where read already (nullopt: not read yet, or that rank
  // published none of this kind).
  std::vector<std::optional<std::string>> cards;
  // Reads a rank's card of this kind from the store, when first needed; throws weft::Error
  // (kAborted once the store is closed). Safe on any thread; outlives the rendezvous.
  std::function<std::optional<std::string>(int rank)> read_card;

  bool same_host(int peer) const { return hosts[peer] == hosts[rank]; }
};

// A path's part in the rendezvous (above).
class PathRendezvous {
 public:
  virtual ~PathRendezvous() = default;
  // What peers need to reach this rank this way: one line (no '\n'); empty publishes nothing.
  virtual std::string card() const = 0;
  // Once, after card(): the peers this path may reach. Throws weft::Error for a card that is
  // not of this kind's form, naming the rank.
  virtual void meet(const PeerDirectory& peers) = 0;
};

struct OpenedPath {
  std::unique_ptr<Path> path;  // null: this kind serves no peer here
  // Refers to `path`, which must outlive it (the Router owns the path from the start: a fast
  // peer may send to us before our rendezvous is over).
  std::unique_ptr<PathRendezvous> rendezvous;
};

struct PathKind {
  const char* name;  // the record's key for its card: [a-z0-9]+
  OpenedPath (*open)(const PathSetup& setup);
};

// Every kind, in order of preference. The last (TCP) reaches every peer and notices departures,
// so that a peer reached by an earlier kind that does not is still watched.
std::span<const PathKind> path_kinds();

}  // namespace weft::transport
