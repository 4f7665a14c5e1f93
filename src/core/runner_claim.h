// RunnerClaim — lets one thread at a time run a group's collectives on this rank.
//
// A group's collectives share its shared-memory window, its eager lines and its rounds, so two
// of them must never run at once: not a synchronous call on the caller's thread beside the
// group's worker, nor synchronous calls from two threads. The caller's thread only tries (when
// it cannot claim, it queues its call for the worker); the worker waits for the claim.
// Claiming is one exchange and releasing a plain store: a group used from one thread, the usual
// case, pays one atomic operation per collective.
#pragma once

#include <atomic>

namespace weft::core {

class RunnerClaim {
 public:
  bool try_claim() {
    return !held_.load(std::memory_order_relaxed) &&
           !held_.exchange(true, std::memory_order_acquire);
  }
  // Waits until the claim is free, then takes it: yields at first, then sleeps (50 us, doubling
  // up to 1 ms), as what holds it is a collective of another thread, which may take long.
  void claim();
  void release() { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};

// Holds a claim until it leaves scope.
class HeldRunnerClaim {
 public:
  explicit HeldRunnerClaim(RunnerClaim& claim) : claim_(claim) {}
  ~HeldRunnerClaim() { claim_.release(); }
  HeldRunnerClaim(const HeldRunnerClaim&) = delete;
  HeldRunnerClaim& operator=(const HeldRunnerClaim&) = delete;

 private:
  RunnerClaim& claim_;
};

}  // namespace weft::core
