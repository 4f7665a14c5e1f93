// TcpStoreServer — the rendezvous store's server, run by rank 0 or by weftrun.
//
// One background thread serves every client over non-blocking sockets (epoll). Each request
// is a length-prefixed frame; a frame larger than max_frame_bytes, a malformed or truncated
// request gets an error answer (or a closed connection) for that client alone: the server
// never crashes and never allocates more than the bytes a client has actually sent.
// With a job token (Options::job_token), a client is served only once it has proved that it
// knows the token, and the server has proved it back (docs/RELIABILITY.md, "Authentication").
// Blocking requests (get, wait, multi_get) are parked until their keys exist or their
// timeout passes. The destructor stops the thread and closes every socket.
//
// Everything a client can make the server hold is bounded: its unsent replies (1 MiB before
// its next request is served), its buffered requests (1 MiB, or one whole request when larger:
// past that the server stops reading it and TCP holds the client back), the number of clients
// (max_clients; one more is answered with an error and closed), and how long a connection may
// sit mid-request (stall_timeout). One event-loop turn serves at most 64 requests of one
// client, so a client that floods requests delays the others by one such share, not by its
// whole flood. Running out of memory for one client's request or replies fails that client.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
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
    // Clients connected at once; a connection beyond them gets an error reply and is closed
    // (logged at WARN). Unset: WEFT_STORE_MAX_CLIENTS (65536).
    std::optional<int> max_clients;
    // How long a connection may stall mid-request before it is closed (logged at WARN): from
    // connecting to its first whole request, between two bytes of a request sent in part, and
    // while replies wait for the client to read them. A client idle between requests, or whose
    // get or wait is parked, is never closed. Unset: WEFT_STORE_STALL_TIMEOUT (30 s).
    std::optional<std::chrono::milliseconds> stall_timeout;
    // The job token clients must prove they know (a challenge-response: the token never
    // crosses the wire) before any request is served; a connection that does not gets no
    // reply and is closed. Unset: WEFT_JOB_TOKEN. Empty: an open store, serving any client.
    std::optional<std::string> job_token;
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
