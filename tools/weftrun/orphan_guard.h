// OrphanGuard — stops this node's ranks, and everything they started, when weftrun dies in a way
// it cannot handle itself: SIGKILL, a crash, the OOM killer.
//
// A dying process runs no code, so the job is left to a small watchdog process that weftrun
// forks before any rank starts. The watchdog blocks reading a pipe whose only write end is
// weftrun's; the kernel closes that end when weftrun dies, however it dies, and the read returns
// end-of-file. Each rank writes its process group id into the pipe itself, between fork and exec,
// while it still holds a copy of the write end: so the watchdog cannot see end-of-file before it
// knows every group that exists. On end-of-file the watchdog sends SIGTERM to every group it
// knows, SIGKILL after the grace period to those not yet empty, and exits. When the job ends
// normally weftrun says "job over" instead, and the watchdog exits without signalling anyone.
//
// The watchdog must outlive weftrun, so it has no parent-death signal. It runs in a session of its
// own and ignores the signals of terminals and job control, so that a Ctrl-C or a closed terminal
// that stops weftrun (which then stops the ranks itself and says "job over") cannot take the
// watchdog first, nor can a kill of weftrun's whole process group. It cannot linger: it lives
// until weftrun ends, plus at most the grace period. Its process name is `weft-guard`.
//
// Contract: one per launcher. Construct it on the main thread after the SignalRelay is installed
// and before spawning ranks; construction throws std::runtime_error when the watchdog cannot be
// started. Ranks register through SpawnSpec::orphan_guard. job_over() (or the destructor) must
// come only once every rank has been reaped. Not thread-safe.
//
// NOTE(orphan-guard-limits): a process that leaves its rank's process group (setsid, setpgid) is
// out of reach, as it is for weftrun's own stops. A watchdog that is itself killed (SIGKILL to it
// by pid) goes unnoticed; the ranks then have only their parent-death SIGTERM (child_process.h).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>

namespace weft::run {

class OrphanGuard {
 public:
  // Starts the watchdog. It remembers up to max_groups process groups; grace is the time
  // between its SIGTERM and its SIGKILL.
  OrphanGuard(std::size_t max_groups, std::chrono::milliseconds grace);
  // job_over(): leaving scope while ranks may still run is the caller's bug (see the contract).
  ~OrphanGuard();
  OrphanGuard(const OrphanGuard&) = delete;
  OrphanGuard& operator=(const OrphanGuard&) = delete;

  // For the child side of fork(), after it has made its own process group: tells the watchdog
  // about that group and closes the child's copy of the write end, so the program it execs
  // never holds it. Async-signal-safe.
  void watch_own_group_from_child() const;

  // The job ended with every rank reaped: the watchdog exits without signalling anyone, and is
  // reaped here. Idempotent.
  void job_over();

 private:
  int write_fd_ = -1;
  pid_t watchdog_pid_ = -1;
};

}  // namespace weft::run
