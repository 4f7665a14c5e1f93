// ChildProcess — one rank: a program started with fork + execvpe in its own process group,
// with its stdout and stderr either captured through pipes or inherited.
//
// Contract: spawn() returns only once exec has succeeded; a program that cannot be run (not
// found, not executable) throws SpawnError naming it and errno's text, and leaves no process
// behind. The child is the leader of a new process group, so signal_group() reaches
// everything it started (a shell's children too). If weftrun dies, the OrphanGuard given in the
// spec stops that whole group (orphan_guard.h); the child itself also gets SIGTERM at once
// (PR_SET_PDEATHSIG), a backstop should the guard be gone. SIGTERM rather than SIGKILL: a rank
// gets the same chance to clean up as when weftrun is stopped by a signal; the guard's SIGKILL
// follows after the grace period.
// The object owns the pipe read ends. Not thread-safe; fork only from the launcher's main thread.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace weft::run {

class OrphanGuard;

// A captured child's pipe is read this much per wake-up, so that a chatty child does not
// starve the others.
constexpr std::size_t kPipeReadChunk = std::size_t{64} * 1024;
// After a child is reaped its pipes are read until empty; a grandchild that keeps writing
// could make that endless, so stop after this much.
constexpr std::size_t kPipeDrainLimit = std::size_t{4} << 20;

class SpawnError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SpawnSpec {
  std::vector<std::string> argv;         // argv[0] is looked up in PATH like execvp
  std::vector<std::string> environment;  // "NAME=value", the child's whole environment
  bool capture_output = true;            // pipes for stdout and stderr, else inherit ours
  bool inherit_stdin = false;            // else stdin_fd, or /dev/null when it is -1
  int stdin_fd = -1;                     // borrowed; the child reads this fd as its stdin
  std::optional<cpu_set_t> cpus;         // the CPUs the child may run on; none: ours
  // Told about the child's process group before exec; borrowed, may be null.
  const OrphanGuard* orphan_guard = nullptr;
};

class ChildProcess {
 public:
  static ChildProcess spawn(const SpawnSpec& spec);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  // Pipe read ends (non-blocking), -1 when not captured or already closed.
  int stdout_fd() const { return stdout_fd_; }
  int stderr_fd() const { return stderr_fd_; }
  void close_stdout();
  void close_stderr();

  // Sends signo to the child's process group (a no-op once that group is empty).
  void signal_group(int signo) const;
  // Reaps the child if it has exited; true once it has (now or before).
  bool try_reap();
  bool reaped() const { return reaped_; }
  // The waitpid status; valid once reaped().
  int wait_status() const { return status_; }

 private:
  ChildProcess() = default;

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

// "exited with code 3" or "was killed by signal 9 (SIGKILL)".
std::string describe_wait_status(int status);
// The exit code a shell would report: the code, or 128 + signal.
int exit_code_of(int status);
bool succeeded(int status);

}  // namespace weft::run
