// TcpStoreServer — the rendezvous store's server, run by rank 0 or by weftrun.
//
// One background thread serves every client over non-blocking sockets (epoll). Each request
// is a length-prefixed frame; a frame larger than max_frame_bytes, a malformed or truncated
// request gets an error answer (or a closed connection) for that client alone: the server
// never crashes and never allocates more than the bytes a client has actually sent.
// Blocking requests (get, wait, multi_get) are parked until their keys exist or their
// timeout passes. The destructor stops the thread and closes every socket.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "weft/export.h"

namespace weft {

class WEFT_API TcpStoreServer {
 public:
  struct Options {
    std::string host = "";  // "" listens on every address (IPv6 and IPv4 when possible)
    int port = 0;           // 0 picks a free port
    int listen_fd = -1;     // an already bound listening socket to adopt (weftrun's)
    std::size_t max_frame_bytes = 64u << 20;
  };

  explicit TcpStoreServer(const Options& options);
  TcpStoreServer() : TcpStoreServer(Options{}) {}
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const;
  // Clients connected right now.
  int num_clients() const;

 private:
  class Loop;
  std::unique_ptr<Loop> loop_;
};

}  // namespace weft
