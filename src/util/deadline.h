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

inline std::chrono::milliseconds time_left(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? left : std::chrono::milliseconds(0);
}

}  // namespace weft::util
