// RankSupervisor — starts this node's ranks and watches them until all have ended: forwards
// their output line by line with a "[rank R] " prefix, stops every rank when one fails or when
// weftrun is told to stop, and (for a job that spans nodes) watches the job's failure key.
// With an output directory, each rank's bytes also go, unchanged, to DIR/rank<R>/stdout and
// DIR/rank<R>/stderr. With a time limit, the job is stopped as on a failure when it expires
// (exit code kTimeLimitExitCode).
//
// Stopping: SIGTERM to every remaining rank's process group, SIGKILL after a grace period
// (3 s after a failure, 5 s after SIGINT/SIGTERM to weftrun; a second SIGINT/SIGTERM kills at
// once). run() returns only when every rank has been reaped. Should weftrun die without doing
// this (SIGKILL), an OrphanGuard does it instead, with the signal grace (orphan_guard.h).
//
// Contract: one per launcher, main thread only. The SignalRelay must be installed before
// run(). The NodeRendezvous is optional (null on a one-node job) and borrowed.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "child_process.h"
#include "line_prefixer.h"
#include "node_rendezvous.h"
#include "orphan_guard.h"
#include "rank_environment.h"
#include "signal_relay.h"

namespace weft::run {

// The exit code of a job stopped by its time limit, as timeout(1)'s.
constexpr int kTimeLimitExitCode = 124;

struct SupervisorOptions {
  std::vector<std::string> command;
  bool prefix_output = true;
  bool timestamp = false;  // the wall-clock time in front of each forwarded line
  std::string output_dir;  // empty: the ranks' output goes to the terminal only
  std::optional<std::chrono::seconds> time_limit;  // counted from the ranks' start
  std::string time_limit_text;                     // as the user wrote it, for the message
  std::string bind = "spread";                     // core_binding.h
  // --stop-on-stdin-close: weftrun's stdin ending means whoever started this node (the --hosts
  // launcher, through a remote shell) is gone, and the ranks are stopped as on SIGHUP.
  bool stop_on_stdin_close = false;
  std::string node_host;  // this node's host, named in messages when not empty
  std::chrono::milliseconds failure_grace{3000};
  std::chrono::milliseconds signal_grace{5000};
  std::chrono::milliseconds store_poll_interval{200};
};

struct SupervisorResult {
  int exit_code = 0;
  // Why the ranks were stopped early, if they were (the line printed to stderr).
  std::optional<JobFailure> failure;
  bool failed_here = false;  // the failure or the signal happened on this node
  int signal = 0;            // SIGINT/SIGTERM received by weftrun, else 0
};

class RankSupervisor {
 public:
  RankSupervisor(SupervisorOptions options, JobLayout layout, SignalRelay& signals,
                 NodeRendezvous* rendezvous);
  ~RankSupervisor();

  SupervisorResult run();

 private:
  struct Rank;
  using Clock = std::chrono::steady_clock;

  void spawn_all();
  void pump_output(Rank& rank, int fd, bool drain);
  void on_rank_exit(Rank& rank);
  void on_signal(int signo);
  void check_job_failure();
  void on_time_limit();
  void on_stdin_readable();
  // "node 1" or "node 1 on HOST".
  std::string node_phrase() const;
  void open_output_files();
  // The job fails because of something on this node: records it as the result and tells the
  // other nodes through the job's store.
  void fail_here(JobFailure failure);
  void begin_stop(std::chrono::milliseconds grace, int signo);
  void finish_stop_if_due();
  int running_count() const;
  int poll_timeout_ms() const;

  SupervisorOptions options_;
  JobLayout layout_;
  SignalRelay& signals_;
  NodeRendezvous* rendezvous_;

  // Declared before ranks_ so that, on an unwind, it is told "job over" only after the ranks'
  // destructors have killed and reaped them.
  std::unique_ptr<OrphanGuard> orphan_guard_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  SupervisorResult result_;
  bool stopping_ = false;
  bool killed_ = false;
  Clock::time_point kill_at_{};
  Clock::time_point next_store_poll_{};
  std::optional<Clock::time_point> time_limit_at_;
  bool watch_stdin_ = false;
};

}  // namespace weft::run
