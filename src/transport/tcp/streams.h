// Several TCP connections per peer pair (WEFT_SOCKET_NSTREAMS): how a large message is split
// across them, and how many a pair uses.
//
// One TCP connection often cannot fill a fast link: a cloud may cap each flow (AWS: 5 Gbit/s
// outside a placement group), the receiving host's network stack handles one flow on one core,
// and one congestion window recovers from a loss alone. A sender that has large messages for a
// peer opens extra connections to it ("streams"), which carry only pieces of striped messages,
// one way: the message's header and first piece go on the connection every message takes (so
// matching and order are as for any message), piece i on stream i.
//
// Thread-safety: functions of values; link_of reads the kernel's state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "transport/frame_header.h"
#include "util/socket.h"

namespace weft::transport {

// The smallest piece worth a connection of its own: below it the headers and wake-ups of more
// connections cost more than the parallel copy gains.
inline constexpr uint64_t kSmallestStripe = 256 * 1024;

// How many connections a message of `bytes` is split across when `ready` connections to its
// peer can carry pieces (the first included): at most one per kSmallestStripe, at least 1.
uint32_t stripes_for(uint64_t bytes, uint32_t ready);

struct Piece {
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

// Piece `index` of a message of `bytes` split `stripes` ways: equal pieces of whole pages, the
// last one shorter. Pieces a hostile header implies beyond the message's end are empty.
Piece piece_of(uint64_t bytes, uint32_t stripes, uint32_t index);

// WEFT_SOCKET_NSTREAMS: 0 for "auto", else 1 to kMaxStripes. Throws weft::Error
// (kInvalidArgument) naming the setting and its value otherwise.
uint32_t parse_stream_setting(std::string_view value);

// What "auto" opens to a peer reached through an interface of `speed_mbps` (0 or less:
// unknown, as for loopback and most virtual NICs) served by kernel driver `driver`: one
// connection per 10 Gbit/s, at most 8; 8 on AWS's ENA, whose flows are capped each (NCCL's
// choice there too); 1 when the speed is unknown.
uint32_t auto_stream_count(int speed_mbps, std::string_view driver);

// The interface that holds local address `local` (a connection's getsockname), its speed
// (/sys/class/net/NAME/speed, -1 when unknown) and its driver's name (empty when none).
struct LinkFacts {
  std::string interface;
  int speed_mbps = -1;
  std::string driver;
};
LinkFacts link_of(const util::SocketAddress& local);

}  // namespace weft::transport
