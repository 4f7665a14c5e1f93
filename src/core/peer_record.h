// PeerRecord — what a rank publishes about itself in the rendezvous store (key weft/peer/<rank>)
// so that the others can reach it: its addresses, its host identity, its shared-memory mailbox.
//
// The store value, one format, lines separated by '\n':
//   1. the addresses it listens on, best first, comma-separated: "10.0.0.1:4000,[fd00::1]:4000,
//      127.0.0.1:4000" (IPv6 in brackets; one address is the whole list);
//   2. its host identity (util/host_identity.h), which may be empty;
//   3. optional: its mailbox (transport::MailboxAddress's text), absent without shared memory.
// Addresses are written as numeric literals, so parsing asks no name service.
//
// Thread-safety: a value.
#pragma once

#include <string>
#include <vector>

#include "util/socket.h"

namespace weft::core {

struct PeerRecord {
  std::vector<util::SocketAddress> addresses;
  std::string host;
  std::string mailbox;  // empty: none
};

std::string encode_peer_record(const PeerRecord& record);

// Throws weft::Error(kInvalidArgument) naming `rank` and the value when it has no address or an
// address that is not host:port.
PeerRecord parse_peer_record(const std::string& value, int rank);

}  // namespace weft::core
