#include "blocking_wait.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace weft::python {

namespace py = pybind11;

WaitPolicy& wait_policy() {
  static WaitPolicy policy;
  return policy;
}

namespace {

// The groups that opted out of interruptible blocking calls (a few; expired ones are dropped).
std::vector<std::weak_ptr<ProcessGroup>>& uninterruptible_groups() {
  static auto* groups = new std::vector<std::weak_ptr<ProcessGroup>>();
  return *groups;
}

}  // namespace

bool blocking_calls_interruptible(const ProcessGroup& group) {
  if (!wait_policy().interruptible) return false;
  for (const auto& weak : uninterruptible_groups()) {
    auto alive = weak.lock();
    if (alive.get() == &group) return false;
  }
  return true;
}

void set_blocking_calls_interruptible(const std::shared_ptr<ProcessGroup>& group,
                                      bool interruptible) {
  auto& groups = uninterruptible_groups();
  std::erase_if(groups, [&](const std::weak_ptr<ProcessGroup>& weak) {
    auto alive = weak.lock();
    return !alive || alive == group;
  });
  if (!interruptible) groups.push_back(group);
}

WaitOutcome poll_until_done(const Work& work, std::chrono::steady_clock::time_point deadline) {
  using Clock = std::chrono::steady_clock;
  if (work.is_completed()) return WaitOutcome::kCompleted;
  WaitPolicy policy = wait_policy();
  // Signals are checked with the GIL every check_every; the slices between run without it.
  constexpr auto kCheckEvery = std::chrono::milliseconds(5);
  for (;;) {
    bool done = false;
    bool deadline_passed = false;
    {
      py::gil_scoped_release release;
      auto now = Clock::now();
      auto spin_until = now + std::chrono::microseconds(policy.spin_us);
      while (!(done = work.is_completed()) && Clock::now() < spin_until) {
        std::this_thread::yield();
      }
      auto check_at = Clock::now() + kCheckEvery;
      int sleep_us = policy.first_sleep_us;
      while (!done) {
        now = Clock::now();
        if (now >= deadline) {
          deadline_passed = true;
          break;
        }
        if (now >= check_at) break;
        auto slice = std::min<Clock::duration>(std::chrono::microseconds(sleep_us), deadline - now);
        std::this_thread::sleep_for(slice);
        sleep_us = std::min(policy.max_sleep_us, sleep_us + std::max(1, sleep_us / 4));
        done = work.is_completed();
      }
      policy.spin_us = 0;  // spin once per wait, not after every signal check
      policy.first_sleep_us = sleep_us;
    }
    if (done) return WaitOutcome::kCompleted;
    if (deadline_passed) return WaitOutcome::kDeadlinePassed;
    if (PyErr_CheckSignals() != 0) return WaitOutcome::kInterrupted;
  }
}

}  // namespace weft::python
