// Waiting for a weft::Work from Python: with the GIL released, in slices, so that Ctrl-C
// interrupts a call blocked on a peer.
//
// Why not Work::wait(timeout) in a loop: on timeout it cancels (or poisons) the operation. So
// the waiter polls is_completed(): it spins for spin_us (latency of small operations), then
// sleeps in slices growing by a quarter each time up to max_sleep_us, checking Python's
// signals between slices (only the main thread receives them). Growing slices keep the extra
// latency below about a quarter of the time already waited; the cap bounds a long wait's
// overshoot and the wake-ups per second.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <memory>

#include "weft/process_group.h"
#include "weft/work.h"

namespace weft::python {

struct WaitPolicy {
  // Blocking calls run as their async form plus an interruptible wait (true), or as weft's
  // synchronous call with the GIL released (false: no thread hand-off, but Ctrl-C waits for
  // the call to finish or time out).
  bool interruptible = true;
  int spin_us = 50;
  int first_sleep_us = 20;
  int max_sleep_us = 1000;
};

// Process-wide; changed only with the GIL held.
WaitPolicy& wait_policy();

// Whether the blocking calls of this group wait interruptibly: the process-wide policy, unless
// the group opted out. The torch backend's groups do (torch's backends are not interrupted by
// Ctrl-C either), so that a synchronous op through torch runs on the calling thread. With the
// GIL held.
bool blocking_calls_interruptible(const ProcessGroup& group);
void set_blocking_calls_interruptible(const std::shared_ptr<ProcessGroup>& group,
                                      bool interruptible);

enum class WaitOutcome { kCompleted, kDeadlinePassed, kInterrupted };

// Call with the GIL held. kInterrupted leaves the Python error (KeyboardInterrupt, ...) set.
WaitOutcome poll_until_done(const Work& work, std::chrono::steady_clock::time_point deadline);

}  // namespace weft::python
