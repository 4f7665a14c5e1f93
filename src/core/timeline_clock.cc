#include "core/timeline_clock.h"

#include <fstream>
#include <limits>
#include <string>

#include "core/op_record.h"

namespace weft::core {

namespace {

bool kernel_keeps_time_with_tsc() {
#if defined(__x86_64__)
  std::ifstream source("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string name;
  return static_cast<bool>(source >> name) && name == "tsc";
#else
  return false;
#endif
}

}  // namespace

bool TimelineClock::counts_cpu_cycles() {
  static const bool cpu_cycles = kernel_keeps_time_with_tsc();
  return cpu_cycles;
}

int64_t TimelineClock::steady_ns() { return steady_now_ns(); }

TimelineClock::Pair TimelineClock::pair() const {
  if (!cpu_cycles_) {
    int64_t now = steady_ns();
    return Pair{now, now};
  }
  // The steady read between two counter reads; the tightest of a few tries, so that an
  // interrupt between the reads does not skew the fit.
  Pair best;
  int64_t tightest = std::numeric_limits<int64_t>::max();
  for (int attempt = 0; attempt < 5; ++attempt) {
    int64_t before = ticks();
    int64_t steady = steady_ns();
    int64_t after = ticks();
    if (after - before < tightest) {
      tightest = after - before;
      best = Pair{before + (after - before) / 2, steady};
    }
  }
  return best;
}

int64_t TimelineClock::to_steady_ns(int64_t ticks, const Pair& first, const Pair& last) {
  int64_t tick_span = last.ticks - first.ticks;
  if (tick_span <= 0) return first.steady_ns + (ticks - first.ticks);
  double ns_per_tick = static_cast<double>(last.steady_ns - first.steady_ns) / tick_span;
  return first.steady_ns +
         static_cast<int64_t>(static_cast<double>(ticks - first.ticks) * ns_per_tick);
}

}  // namespace weft::core
