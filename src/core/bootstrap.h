// The rendezvous of a job through its store: every rank opens its paths (the table of path
// kinds, transport/path_table.h) and publishes its host identity and each path's card
// (core/peer_record.h); rank 0, once every record is in, publishes which host every rank is on
// (core/rank_directory.h); every rank then reads the records of the ranks on its own host, and
// another rank's only when it first talks to it. All within one deadline. This layer names no
// path: what a card holds, and what a path does with its peers' cards, is the path's own.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/world.h"
#include "transport/router.h"

namespace weft::core {

struct Rendezvous {
  std::unique_ptr<transport::Router> transport;
  std::vector<std::string> hosts;  // host identity per rank
};

Rendezvous rendezvous_with_peers(const WorldOptions& options);

}  // namespace weft::core
