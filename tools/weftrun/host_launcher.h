// HostLauncher — runs a job on the hosts of --hosts or --hostfile from one command, as mpirun
// does: starts one weftrun per host (the node agents, which meet through node 0's store exactly
// as weftruns started by hand with --node-rank do), relays their output, and stops them all.
//
// Node K runs on the K-th host of the placement (rank_placement.h); node 0, on the first host,
// hosts the job's store, which the others reach at that host's name (or --master-addr). A host
// that is this machine (local_host.h) gets its node agent as a plain child; any other host gets
// it through the remote shell, `--rsh` followed by the host and one shell line
// (node_command.h). The agents prefix the ranks' lines themselves; the launcher passes each
// agent's stdout and stderr on whole line by whole line, so lines from different hosts never mix.
//
// Stopping: every agent's stdin is a pipe from the launcher that is never written to. An agent
// stops its ranks when that pipe ends (--stop-on-stdin-close), which is how the stop reaches a
// remote host even though killing ssh kills nothing over there; it ends when the launcher
// closes it, and when the launcher dies, however it dies. On SIGINT/SIGTERM the launcher closes
// the pipes and passes the signal to the local agents only: a remote agent's remote shell stays,
// so that the agent's last lines (which ranks it stopped, their flight table) still come back
// through it and it exits when the agent does. What is left after a grace period is killed; a
// second signal kills at once. When a rank fails, the agents stop one another through the store and
// each names the rank, its node and its host; the launcher only steps in (closing the pipes) if
// some agent is still running well after another ended in failure, e.g. one whose remote shell
// could not connect.
//
// Exit code: 128 + signal when the launcher was interrupted; else the exit code of the first
// agent (in time) that ended non-zero, which for a failed rank is that rank's code as
// docs/weftrun.md gives it; else 0.
//
// Contract: one per launcher, main thread only; the SignalRelay must be installed before run().
// run() returns only once every agent it started has been reaped.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launch_options.h"
#include "node_command.h"
#include "signal_relay.h"

namespace weft::run {

class HostLauncher {
 public:
  // Throws UsageError when node 0's host is named so that the other hosts cannot reach it.
  HostLauncher(LaunchOptions options, SignalRelay& signals);
  ~HostLauncher();

  int run();

 private:
  struct Node;
  using Clock = std::chrono::steady_clock;

  void start_nodes();
  void pump_output(Node& node, int fd, bool drain);
  void on_node_exit(Node& node);
  void on_signal(int signo);
  void begin_stop(int signo, std::chrono::milliseconds grace);
  void finish_stop_if_due();
  int running_count() const;
  int poll_timeout_ms() const;

  LaunchOptions options_;
  SignalRelay& signals_;
  NodeJob job_;
  std::vector<std::unique_ptr<Node>> nodes_;
  int exit_code_ = 0;
  int signal_ = 0;
  bool stopping_ = false;
  bool killed_ = false;
  Clock::time_point kill_at_{};
  // Set when an agent ended in failure while others still run: when to stop those.
  std::optional<Clock::time_point> stop_stragglers_at_;
};

}  // namespace weft::run
