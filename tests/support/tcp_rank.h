// A TcpTransport standing alone as one rank of a test (no World, no store), listening on
// loopback, and a bounded wait for its requests. Shared by the tests that drive the transport's
// handshake and framing from raw sockets.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "transport/request.h"
#include "transport/tcp/tcp_transport.h"
#include "util/socket.h"

namespace weft::testing {

inline std::unique_ptr<transport::TcpTransport> make_tcp_rank(
    int rank, const std::string& token, int world, std::chrono::milliseconds handshake_timeout) {
  transport::TcpTransportOptions options;
  options.rank = rank;
  options.world_size = world;
  options.job_token = token;
  options.listen_address = util::resolve("127.0.0.1", 0);
  options.handshake_timeout = handshake_timeout;
  return std::make_unique<transport::TcpTransport>(options);
}

inline bool finishes_within(const transport::RequestPtr& request, std::chrono::milliseconds limit) {
  return request->wait(std::chrono::steady_clock::now() + limit, 0);
}

}  // namespace weft::testing
