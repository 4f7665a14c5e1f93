// NodeRendezvous — how the weftrun agents of a job that spans nodes meet and watch each other
// through the job's store (hosted by node 0's weftrun).
//
// The store authenticates every agent by the job token, which every node is given (never sent
// through the store): a node with another token cannot join.
// Keys (all under "weftrun/"):
//   node/<r>/joins        counter: a second agent claiming node rank r is refused
//   node/<r>/nproc        ranks per node of node r; all nodes must agree
//   failed                "<exit code>\n<line>": the first failure anywhere (compare_set, so
//                         the first writer wins); every agent polls it while its ranks run
//   done                  counter of agents whose ranks have all ended
// Node 0 keeps the store up until every node is done (or a failure has been published and a
// short linger has passed), so a node whose ranks finish late still has its store.
//
// Contract: every call may throw weft::Error (kTimeout, kPeerFailure when node 0's store is
// gone). Not thread-safe: the launcher's main thread only.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "weft/tcp_store.h"

namespace weft::run {

struct JobFailure {
  int exit_code = 1;
  std::string line;  // what happened, e.g. "rank 5 (node 1, pid 42) exited with code 3"
};

class NodeRendezvous {
 public:
  // Connects to host:port (retrying until join_timeout: node 0 may start later), proving
  // that it knows `job_token` (weft::Error kUnauthorized when node 0's store has another).
  NodeRendezvous(const std::string& host, int port, int nnodes, int node_rank,
                 std::chrono::milliseconds join_timeout, const std::string& job_token);

  // Waits until every node has joined with the same nproc_per_node. Throws
  // std::runtime_error with a one-line reason on a duplicate node rank, disagreeing nproc or a
  // join timeout.
  void join(int nproc_per_node);

  // Publishes a failure unless one is published already.
  void publish_failure(const JobFailure& failure);
  // The published failure, if any. Never blocks for long (about a second when the store does
  // not answer); throws when the store closed the connection, or stayed silent or out of reach
  // for the join timeout.
  std::optional<JobFailure> poll_failure();
  // Tells the others this node's ranks have all ended.
  void report_done();
  // Node 0: waits until every node reported done, `give_up()` returns true, or `linger`
  // passes (when set); polls every ~200 ms. Returns a failure published meanwhile.
  std::optional<JobFailure> wait_until_all_done(const std::function<bool()>& give_up,
                                                std::optional<std::chrono::milliseconds> linger);

  const std::string& address() const { return address_; }

 private:
  std::unique_ptr<TcpStore> store_;
  int nnodes_;
  int node_rank_;
  std::chrono::milliseconds join_timeout_;
  std::string address_;
  std::optional<std::chrono::steady_clock::time_point> silent_since_;  // polls unanswered
};

}  // namespace weft::run
