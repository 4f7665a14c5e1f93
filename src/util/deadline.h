// Deadlines: every wait in weft has one.
#pragma once

#include <chrono>

namespace weft::util {

using Clock = std::chrono::steady_clock;

// Longer timeouts mean "no deadline": saturated here, so that none overflows into the past.
inline constexpr std::chrono::milliseconds kFarAway = std::chrono::hours(24 * 365);

inline Clock::time_point deadline_after(std::chrono::milliseconds timeout) {
  return Clock::now() + (timeout > kFarAway ? kFarAway : timeout);
}

// A call's deadline that reads the clock only when a wait first needs it: most small calls
// finish without such a wait, and a clock read (tens of nanoseconds on a VM) is a visible part
// of their cost. Counted from that first wait, not from the call's start.
class LazyDeadline {
 public:
  explicit LazyDeadline(Clock::time_point at) : at_(at), known_(true) {}
  // A deadline that remembers the timeout that set it (error messages quote it).
  LazyDeadline(Clock::time_point at, std::chrono::milliseconds timeout)
      : timeout_(timeout), at_(at), known_(true) {}
  explicit LazyDeadline(std::chrono::milliseconds timeout) : timeout_(timeout) {}
  Clock::time_point get() {
    if (!known_) {
      at_ = deadline_after(timeout_);
      known_ = true;
    }
    return at_;
  }
  // The timeout this deadline counts; zero when unknown (made from a time point alone).
  std::chrono::milliseconds timeout() const { return timeout_; }
  // Whether the clock was read for it, or it was given: a call whose deadline stayed unread
  // had no wait that needed one.
  bool known() const { return known_; }

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
