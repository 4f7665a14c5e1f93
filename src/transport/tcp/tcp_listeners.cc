#include "transport/tcp/tcp_listeners.h"

#include <string>

#include "transport/tcp/congestion_control.h"

namespace weft::transport {

TcpListeners::TcpListeners(const std::vector<util::SocketAddress>& addresses,
                           const std::string& congestion_control, int epoll_fd, int rank)
    : acceptor_(epoll_fd, util::Subsys::kTransport, "rank " + std::to_string(rank)) {
  sockets_.reserve(addresses.size());
  for (const util::SocketAddress& address : addresses) {
    util::Fd socket = util::listen_on(address, /*non_blocking=*/true);
    // On the listener, not on what it accepts: a connection starts with its listener's, and one
    // that started paced (BBR) stays paced when changed once established.
    use_congestion_control(socket.get(), congestion_control);
    addresses_.push_back(util::local_address_of(socket.get()));
    sockets_.push_back(std::move(socket));
  }
  for (util::Fd& socket : sockets_) acceptor_.add(socket.get(), epoll_data_t{.ptr = &socket});
}

bool TcpListeners::accept_if_listener(const void* tag, const Take& take) {
  for (util::Fd& socket : sockets_) {
    if (tag != &socket) continue;
    acceptor_.accept_all(socket.get(), take);
    return true;
  }
  return false;
}

void TcpListeners::close() {
  for (util::Fd& socket : sockets_) socket.reset();
}

}  // namespace weft::transport
