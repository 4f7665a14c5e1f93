#include "util/futex.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace weft::util {

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

void yield_core() { sched_yield(); }

namespace {

void wait_on(std::atomic<uint32_t>& word, uint32_t expected,
             std::chrono::steady_clock::time_point deadline, int operation) {
  auto left = deadline - std::chrono::steady_clock::now();
  if (left <= std::chrono::nanoseconds::zero()) return;
  auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
  timespec relative{static_cast<time_t>(nanos / 1'000'000'000),
                    static_cast<long>(nanos % 1'000'000'000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), operation, expected, &relative, nullptr,
          0);
}

void wake_on(std::atomic<uint32_t>& word, int operation) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), operation, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace

void futex_wait(std::atomic<uint32_t>& word, uint32_t expected,
                std::chrono::steady_clock::time_point deadline) {
  wait_on(word, expected, deadline, FUTEX_WAIT_PRIVATE);
}

void futex_wake_all(std::atomic<uint32_t>& word) { wake_on(word, FUTEX_WAKE_PRIVATE); }

void futex_wait_shared(std::atomic<uint32_t>& word, uint32_t expected,
                       std::chrono::steady_clock::time_point deadline) {
  wait_on(word, expected, deadline, FUTEX_WAIT);
}

void futex_wake_all_shared(std::atomic<uint32_t>& word) { wake_on(word, FUTEX_WAKE); }

}  // namespace weft::util
