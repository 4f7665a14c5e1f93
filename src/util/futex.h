// A 32-bit word that threads (of one process, or of several over shared memory) can sleep on: the
// blocking half of every spin-then-block wait in weft.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace weft::util {

// Sleeps while word == expected, at most until deadline. Spurious wake-ups are possible:
// callers re-check their condition.
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected,
                std::chrono::steady_clock::time_point deadline);
void futex_wake_all(std::atomic<uint32_t>& word);
// The same for a word in memory shared between processes (a MAP_SHARED mapping).
void futex_wait_shared(std::atomic<uint32_t>& word, uint32_t expected,
                       std::chrono::steady_clock::time_point deadline);
void futex_wake_all_shared(std::atomic<uint32_t>& word);

// Spins (with a pause, then sched_yield unless told not to) for up to spin_us microseconds
// until done() is true. Returns whether it became true.
// A check may cost a system call (a waiter reading its socket), so the checks before the first
// yield are few when yielding is allowed: then the thread that will complete us may be waiting
// for this very core, and a pause spent checking is time it does not run.
template <typename Predicate>
bool spin_until(Predicate done, int64_t spin_us, bool may_yield = true);
inline constexpr int kChecksBeforeYielding = 4;
inline constexpr int kChecksBeforeSpinningOn = 64;  // without yields

void cpu_relax();

void yield_core();

template <typename Predicate>
bool spin_until(Predicate done, int64_t spin_us, bool may_yield) {
  if (done()) return true;
  if (spin_us <= 0) return false;
  auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  const int paused_checks = may_yield ? kChecksBeforeYielding : kChecksBeforeSpinningOn;
  for (int i = 0; i < paused_checks; ++i) {
    if (done()) return true;
    cpu_relax();
  }
  // Then yield between checks (unless every thread that could complete us has a core of its
  // own): the thread that will complete us (the transport's event loop, or a peer rank when
  // ranks outnumber cores) may need this very core.
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    if (may_yield) {
      yield_core();
    } else {
      for (int i = 0; i < 16; ++i) cpu_relax();
    }
  }
  return done();
}

}  // namespace weft::util
