// Deadlines: every wait in weft has one.
#pragma once

#include <chrono>

namespace weft::util {

using Clock = std::chrono::steady_clock;

inline Clock::time_point deadline_after(std::chrono::milliseconds timeout) {
  // Saturate: "a very long timeout" must not overflow into the past.
  constexpr auto kFarAway = std::chrono::hours(24 * 365);
  return Clock::now() + (timeout > kFarAway ? std::chrono::milliseconds(kFarAway) : timeout);
}

// A call's deadline that reads the clock only when a wait first needs it: most small calls
// finish without such a wait, and a clock read (tens of nanoseconds on a VM) is a visible part
// of their cost. Counted from that first wait, not from the call's start.
class LazyDeadline {
 public:
  explicit LazyDeadline(Clock::time_point at) : at_(at), known_(true) {}
  explicit LazyDeadline(std::chrono::milliseconds timeout) : timeout_(timeout) {}
  Clock::time_point get() {
    if (!known_) {
      at_ = deadline_after(timeout_);
      known_ = true;
    }
    return at_;
  }

 private:
  std::chrono::milliseconds timeout_{0};
  Clock::time_point at_{};
  bool known_ = false;
};

inline std::chrono::milliseconds time_left(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? left : std::chrono::milliseconds(0);
}

}  // namespace weft::util
