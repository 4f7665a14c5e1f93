// PeerRecord — what a rank publishes about itself in the rendezvous store (key weft/peer/<rank>)
// so that the others can reach it: its host identity, and a card for each of its paths (what a
// peer needs to reach it that way: transport/path_table.h).
//
// The store value, one format, lines separated by '\n':
//   1. its host identity (util/host_identity.h), which may be empty;
//   2. one line per path kind it opened, "name=card" ("tcp=10.0.0.1:4000,127.0.0.1:4000",
//      "shm=shm:4242:17:140000000"), by name.
// What a card holds is its path kind's business; this layer only carries it.
//
// Thread-safety: a value.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace weft::core {

struct PeerRecord {
  std::string host;
  std::map<std::string, std::string> cards;  // by path kind

  std::optional<std::string> card(const std::string& kind) const {
    auto found = cards.find(kind);
    if (found == cards.end()) return std::nullopt;
    return found->second;
  }
};

std::string encode_peer_record(const PeerRecord& record);

// Throws weft::Error(kInvalidArgument) naming `rank` and the value when a card line is not
// "name=card" or a kind appears twice.
PeerRecord parse_peer_record(const std::string& value, int rank);

}  // namespace weft::core
