// TimelineClock — the timeline's timestamps: the CPU's time-stamp counter where the kernel
// itself keeps time with it, the steady clock elsewhere.
//
// Every op is stamped twice, so the read's cost is paid on the smallest collectives, and the
// counter is cheaper to read than the steady clock built on it. The kernel's choice of clock
// source is the test: it uses "tsc" only when the counter runs at a constant rate through sleep
// states and agrees across CPUs (it checks both at boot and watches them), which is exactly what a
// timestamp taken on one CPU and compared with one taken on another needs. Ticks become steady
// nanoseconds through a linear fit between two (ticks, steady) pairs taken when the trace
// starts and when it is written, so the rate is measured over the whole run, not assumed.
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace weft::core {

class TimelineClock {
 public:
  // Whether ticks() reads the time-stamp counter (decided once per process).
  static bool counts_cpu_cycles();

  // The steady clock; best() probes for the counter.
  TimelineClock() = default;
  explicit TimelineClock(bool cpu_cycles) : cpu_cycles_(cpu_cycles) {}
  static TimelineClock best() { return TimelineClock(counts_cpu_cycles()); }

  int64_t ticks() const {
#if defined(__x86_64__)
    if (cpu_cycles_) return static_cast<int64_t>(__rdtsc());
#endif
    return steady_ns();
  }

  // A reading of both clocks as close together as they can be taken.
  struct Pair {
    int64_t ticks = 0;
    int64_t steady_ns = 0;
  };
  Pair pair() const;

  // Steady nanoseconds of `ticks`, by the line through `first` and `last`.
  static int64_t to_steady_ns(int64_t ticks, const Pair& first, const Pair& last);

 private:
  static int64_t steady_ns();
  bool cpu_cycles_ = false;
};

}  // namespace weft::core
