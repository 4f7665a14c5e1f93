// AdaptiveSpin — how long a waiter spins before it sleeps, learned from the waits it sees.
//
// A sleep costs a scheduler wake-up; a spin costs the core. After a wait that outlasted the spin
// and slept: if the whole wait was short (at most max_us), a spin of twice that would have
// covered it without the wake-up, so the next spins are that long; a long wait (the partner was
// computing) was right to sleep, so the spin halves (down to min_us). A wait that ends within
// the spin changes nothing. Threads may share one: the value is a hint, read and written relaxed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace weft::util {

class AdaptiveSpin {
 public:
  // A spin that stays `fixed_us` (WEFT_SPIN_US set).
  explicit AdaptiveSpin(int64_t fixed_us = 0);
  AdaptiveSpin(int64_t initial_us, int64_t min_us, int64_t max_us);

  // Starts learning again within new bounds; nothing for a fixed spin.
  void bound(int64_t initial_us, int64_t min_us, int64_t max_us);
  int64_t spin_us() const { return spin_us_.load(std::memory_order_relaxed); }
  // After a wait that spun spin_us() and then slept for `slept`.
  void after_sleep(std::chrono::steady_clock::duration slept);

 private:
  std::atomic<int64_t> spin_us_;
  int64_t min_us_ = 0;
  int64_t max_us_ = 0;
  bool fixed_;
};

}  // namespace weft::util
