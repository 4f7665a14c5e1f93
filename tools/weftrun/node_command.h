// NodeCommand — the command line that starts one node's weftrun for a job launched on many hosts
// (host_launcher.h): the node agent's own flags, the environment it gets, and, for a remote host,
// the one shell line the remote shell runs and the remote shell's argv around it.
//
// The remote line is  cd DIR && exec env NAME=VALUE... WEFTRUN --nnodes ... -- PROGRAM ARGS...
// with every word quoted for a POSIX shell, because ssh hands the remote login shell one string.
// The job token travels in that environment, never through the job's store.
// NOTE(weftrun-token-argv): the token is thus visible in `ps` on the launching host (the remote
// shell's argv) and on the remote host (env's argv) for as long as env runs (it execs weftrun at
// once). ssh cannot send it any other way without server configuration (AcceptEnv).
//
// Contract: pure functions of their arguments.
#pragma once

#include <string>
#include <vector>

#include "launch_options.h"

namespace weft::run {

// What every node of the job shares; one per job.
struct NodeJob {
  std::string weftrun_path;  // the same path is used on every host
  std::string working_dir;   // each node starts there, like mpirun's ranks
  std::string master_addr;   // where the other nodes reach node 0's store
  int master_port = 0;
  std::string job_token;
  // NAME=VALUE for every node: WEFT_* from the launcher's environment and -x.
  std::vector<std::string> environment;
};

// The flags of node `node_rank`'s weftrun, from its own name (argv[0]) to the program's last
// argument.
std::vector<std::string> node_weftrun_argv(const LaunchOptions& options, const NodeJob& job,
                                           int node_rank);

// The variables every node's weftrun gets: WEFT_* of `inherited` except the ones weftrun sets
// itself per node, then each -x NAME (its value in `inherited`; left out when unset there) or
// NAME=VALUE, then WEFT_JOB_TOKEN.
std::vector<std::string> node_environment(const char* const* inherited,
                                          const std::vector<std::string>& exports,
                                          const std::string& job_token);

// `word` quoted for a POSIX shell: left alone when it holds only safe characters.
std::string shell_quote(const std::string& word);

// The line a remote shell runs to start a node.
std::string remote_shell_line(const NodeJob& job, const std::vector<std::string>& weftrun_argv);

// --rsh's words, then the host, then the line: what is executed on this host.
std::vector<std::string> remote_shell_argv(const std::string& rsh, const std::string& host,
                                           const std::string& line);

}  // namespace weft::run
