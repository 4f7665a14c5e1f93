// RankEnvironment — the environment one rank is started with: weftrun's own environment plus
// the bootstrap variables (torch's names, so torch programs run unchanged) and weft's.
//
// Contract: pure functions of their arguments; variables weftrun sets replace any inherited
// value of the same name.
#pragma once

#include <string>
#include <vector>

namespace weft::run {

// What every rank of this node shares.
struct JobLayout {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr;  // MASTER_ADDR
  int master_port = 0;      // MASTER_PORT (for torch's own store; not weft's)
  std::string store_addr;   // WEFT_STORE_ADDR, host:port of the store weftrun hosts
  std::string job_token;    // WEFT_JOB_TOKEN

  int world_size() const { return nnodes * nproc_per_node; }
  int global_rank(int local_rank) const { return node_rank * nproc_per_node + local_rank; }
};

// "NAME=value" entries: `inherited` (e.g. environ) with the rank's variables set.
std::vector<std::string> rank_environment(const JobLayout& layout, int local_rank,
                                          const char* const* inherited);

// "host:port", with brackets around an IPv6 literal.
std::string join_host_port(const std::string& host, int port);

}  // namespace weft::run
