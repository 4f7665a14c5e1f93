// SignalRelay — turns SIGINT, SIGTERM and SIGCHLD into bytes on a pipe that weftrun's poll
// loop watches (the self-pipe trick), so no real work runs in a signal handler.
//
// Contract: one instance per process (the handlers write to a process-wide fd). install()
// sets the handlers and ignores SIGPIPE (a closed stdout must not kill the launcher);
// take_termination_signal() returns the first pending SIGINT/SIGTERM (0 if none) and drains
// the pipe. Children must call reset_signals_in_child() between fork and exec. Not
// thread-safe: call from the launcher's main thread only.
#pragma once

#include <signal.h>

#include <string>

namespace weft::run {

class SignalRelay {
 public:
  SignalRelay() = default;
  ~SignalRelay();
  SignalRelay(const SignalRelay&) = delete;
  SignalRelay& operator=(const SignalRelay&) = delete;

  void install();
  // The read end to poll for POLLIN.
  int fd() const;
  // Drains the pipe; returns the last SIGINT/SIGTERM received since the previous call, else 0.
  // SIGCHLD bytes only wake the loop.
  int take_termination_signal();

  // Async-signal-safe: restores default dispositions and an empty signal mask. For the child
  // side of fork().
  static void reset_signals_in_child();
};

// "SIGTERM", or "signal 42" for one without a name.
std::string signal_name(int signo);

// Blocks every signal for the lifetime of the object (around fork(), so that a child never
// runs weftrun's handlers before exec).
class SignalBlock {
 public:
  SignalBlock();
  ~SignalBlock();
  SignalBlock(const SignalBlock&) = delete;
  SignalBlock& operator=(const SignalBlock&) = delete;

 private:
  sigset_t saved_mask_;
};

}  // namespace weft::run
