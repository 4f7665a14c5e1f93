#include "util/adaptive_spin.h"

#include <algorithm>

namespace weft::util {

AdaptiveSpin::AdaptiveSpin(int64_t fixed_us) : spin_us_(fixed_us), fixed_(true) {}

AdaptiveSpin::AdaptiveSpin(int64_t initial_us, int64_t min_us, int64_t max_us)
    : spin_us_(initial_us), min_us_(min_us), max_us_(max_us), fixed_(false) {}

void AdaptiveSpin::bound(int64_t initial_us, int64_t min_us, int64_t max_us) {
  if (fixed_) return;
  min_us_ = min_us;
  max_us_ = max_us;
  spin_us_.store(initial_us, std::memory_order_relaxed);
}

void AdaptiveSpin::after_sleep(std::chrono::steady_clock::duration slept) {
  if (fixed_) return;
  const int64_t spun = spin_us();
  const int64_t waited_us =
      spun + std::chrono::duration_cast<std::chrono::microseconds>(slept).count();
  const int64_t next = waited_us <= max_us_ ? std::clamp(2 * waited_us, min_us_, max_us_)
                                            : std::max(min_us_, spun / 2);
  spin_us_.store(next, std::memory_order_relaxed);
}

}  // namespace weft::util
