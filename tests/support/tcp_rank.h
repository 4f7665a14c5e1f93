// One rank of a test with the TCP path alone under a Router (no World, no store), listening on
// loopback, and a bounded wait for its requests. Shared by the tests that drive the transport's
// handshake and framing from raw sockets.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "transport/request.h"
#include "transport/router.h"
#include "transport/tcp/tcp_path.h"
#include "util/socket.h"

namespace weft::testing {

// Makes a path to be tried before TCP (shared memory), given the Router it reports to.
using PathMaker = std::function<std::unique_ptr<transport::Path>(transport::PathEvents&)>;

// A Router whose last (or only) path is TCP; the TCP path's set-up calls are at hand.
class TcpRank : public transport::Router {
 public:
  TcpRank(int rank, const transport::TcpPathOptions& options, const PathMaker& first_path)
      : Router(rank, options.world_size) {
    if (first_path) add_path(first_path(*this));
    auto tcp = std::make_unique<transport::TcpPath>(options, *this);
    tcp_ = tcp.get();
    add_path(std::move(tcp));
  }
  // Stops the paths here, not in ~Router: their threads call into this object until then, and
  // a destructor further down would change its vtable under them.
  ~TcpRank() override { shutdown(std::chrono::steady_clock::now() + std::chrono::seconds(2)); }

  transport::TcpPath& tcp() { return *tcp_; }
  util::SocketAddress listen_address() const { return tcp_->listen_address(); }
  void set_peer_addresses(std::vector<util::SocketAddress> addresses) {
    tcp_->set_peer_addresses(std::move(addresses));
  }
  void set_peer_candidates(std::vector<std::vector<util::SocketAddress>> candidates) {
    tcp_->set_peer_candidates(std::move(candidates));
  }

 private:
  transport::TcpPath* tcp_;
};

inline std::unique_ptr<TcpRank> make_tcp_rank(int rank, const std::string& token, int world,
                                              std::chrono::milliseconds handshake_timeout,
                                              const PathMaker& first_path = nullptr) {
  transport::TcpPathOptions options;
  options.rank = rank;
  options.world_size = world;
  options.job_token = token;
  options.listen_address = util::resolve("127.0.0.1", 0);
  options.handshake_timeout = handshake_timeout;
  return std::make_unique<TcpRank>(rank, options, first_path);
}

inline bool finishes_within(const transport::RequestPtr& request, std::chrono::milliseconds limit) {
  return request->wait(std::chrono::steady_clock::now() + limit, 0);
}

// Waits as a rank does: polling the transport, so that the waiting thread itself reads its
// peer's connection (the event loop reads the others), for up to a second; then it stops
// polling (the event loop watches the connection again) and sleeps.
inline bool completes_polled(TcpRank& rank, const transport::RequestPtr& request,
                             std::chrono::milliseconds limit) {
  bool polling = true;
  rank.start_polling(*request);
  auto stop_polling = [&] {
    if (std::exchange(polling, false)) rank.stop_polling(*request);
  };
  bool done = request->wait(
      std::chrono::steady_clock::now() + limit, 1'000'000, [&] { return rank.poll(*request); },
      stop_polling, true);
  stop_polling();
  return done;
}

}  // namespace weft::testing
