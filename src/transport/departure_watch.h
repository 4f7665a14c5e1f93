// DepartureWatch — a path's capability (path.h) of noticing by itself that a peer died or
// left (a TCP connection ends; a shared-memory peer's goodbye or its pidfd), and of carrying
// such news on to its other peers.
//
// The Router has a peer watched by the first path with this capability that can (from the
// first message to or from it), so that a peer reached by a path without it (a fabric whose
// endpoints say nothing of a peer's end) is still noticed when it goes. Thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace weft::transport {

class DepartureWatch {
 public:
  virtual ~DepartureWatch() = default;
  // Starts watching `peer`, which may talk to us another way: false when it cannot yet (the
  // peer's address is unknown). Returns at once.
  virtual bool watch(int peer) = 0;
  // Where the peer is, for error messages; empty when this path has no address for it.
  virtual std::string peer_address(int peer) const {
    (void)peer;
    return {};
  }
  // Tells every peer this path is connected to (but `peer` itself) that `peer` died, or that a
  // context was aborted.
  virtual void announce_death(int peer, const std::string& text) = 0;
  virtual void announce_abort(uint64_t context, const std::string& text) = 0;
};

}  // namespace weft::transport
