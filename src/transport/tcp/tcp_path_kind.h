// The TCP row of the table of path kinds (path_table.h): a TcpPath that reaches every peer,
// listening where plan_listening (listen_plan.h) says, configured from the WEFT_SOCKET_* and
// WEFT_HANDSHAKE_TIMEOUT settings. Its card is the list of addresses it publishes, best first:
// "10.0.0.1:4000,[fd00::1]:4000,127.0.0.1:4000" (IPv6 in brackets; numeric literals only, so
// that reading a card asks no name service). The cards of this host's ranks (all of them on
// rank 0) are ordered for dialling at once; any other's is read when the peer is first needed.
#pragma once

#include <string>
#include <vector>

#include "transport/path_table.h"
#include "util/socket.h"

namespace weft::transport {

OpenedPath open_tcp_path(const PathSetup& setup);

std::string encode_address_card(const std::vector<util::SocketAddress>& addresses);
// Throws weft::Error(kInvalidArgument) naming `rank` and the card when it has no address or an
// address that is not host:port.
std::vector<util::SocketAddress> parse_address_card(const std::string& card, int rank);

}  // namespace weft::transport
