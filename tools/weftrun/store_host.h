// StoreHost — the job's rendezvous store (a weft::TcpStoreServer) running inside weftrun, so
// that a rank that dies, rank 0 included, does not take the store with it.
//
// Contract: the constructors return with the server listening. On a single node the listening
// socket is bound to 127.0.0.1 port 0 by weftrun itself and adopted by the server (no window
// in which another process could take the port). Destruction stops the server. Not
// thread-safe (the server has its own thread and locking).
#pragma once

#include <memory>
#include <string>

#include "weft/tcp_store_server.h"

namespace weft::run {

class StoreHost {
 public:
  // On a free port of 127.0.0.1: a one-node job. Clients must prove they know `job_token`.
  static std::unique_ptr<StoreHost> on_free_local_port(const std::string& job_token);
  // On `port` of `host`; every address when `host` is empty: node 0 of a job that spans nodes.
  static std::unique_ptr<StoreHost> on_port(const std::string& host, int port,
                                            const std::string& job_token);

  int port() const { return server_->port(); }
  int num_clients() const { return server_->num_clients(); }

 private:
  explicit StoreHost(std::unique_ptr<TcpStoreServer> server) : server_(std::move(server)) {}
  std::unique_ptr<TcpStoreServer> server_;
};

// A TCP port that was free on every address when this ran, other than the ones still bound
// (for MASTER_PORT, which a torch program binds itself: weftrun cannot hold it open).
int pick_free_port();

}  // namespace weft::run
