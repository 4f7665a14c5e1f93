// TcpListeners — the TCP path's listening sockets (one per address it listens on) and the
// accepting of their connections (util::Acceptor: a shortage of descriptors pauses them).
// Thread-safety: addresses() from any thread (fixed at construction); the rest from the event
// loop's thread only, but close(), which the owner calls once that loop has stopped.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "util/acceptor.h"
#include "util/socket.h"

namespace weft::transport {

class TcpListeners {
 public:
  // Listens on each address (port 0: any free one), each socket with `congestion_control`
  // (use_congestion_control), watched by `epoll_fd`; `rank` names them in warnings.
  // Throws Error(kSystem) when an address cannot be listened on.
  TcpListeners(const std::vector<util::SocketAddress>& addresses,
               const std::string& congestion_control, int epoll_fd, int rank);

  // Where they listen, with the real ports, in the order given.
  const std::vector<util::SocketAddress>& addresses() const { return addresses_; }
  using Take = std::function<void(util::Fd fd, const util::SocketAddress& from)>;
  // When `tag` is a listener's: hands each connection waiting on it to `take`, and says so.
  bool accept_if_listener(const void* tag, const Take& take);
  // Between batches of events: the listeners watched again after a pause.
  void resume_when_due() { acceptor_.resume_when_due(); }
  // Stops listening (new connections are refused from then on).
  void close();

 private:
  std::vector<util::Fd> sockets_;  // never resized after construction: epoll points into it
  std::vector<util::SocketAddress> addresses_;
  util::Acceptor acceptor_;
};

}  // namespace weft::transport
