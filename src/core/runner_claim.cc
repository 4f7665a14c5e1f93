#include "core/runner_claim.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "util/remote_barrier.h"

namespace weft::core {

namespace {

// Yields at first, then sleeps 50 us, doubling up to 1 ms: what is waited for is the end of
// another thread's collective, which may take long.
template <typename Done>
void wait_until(Done done) {
  constexpr int kYields = 64;
  constexpr std::chrono::microseconds kFirstSleep{50}, kLongestSleep{1000};
  std::chrono::microseconds sleep = kFirstSleep;
  for (int tries = 0; !done(); ++tries) {
    if (tries < kYields) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(sleep);
      sleep = std::min(2 * sleep, kLongestSleep);
    }
  }
}

}  // namespace

RunnerClaim::RunnerClaim() {
  if (!util::enable_remote_barriers()) state_.store(kShared, std::memory_order_relaxed);
}

void RunnerClaim::claim() {
  wait_until([this] { return try_exchange(); });
  wait_for_sole_issuer();
}

void RunnerClaim::end_sole_issue() {
  int state = state_.load(std::memory_order_acquire);
  if (state != kAlone || !state_.compare_exchange_strong(state, kEnding)) return;
  // Registered at construction, the barrier cannot fail for want of it.
  util::remote_barrier();
  state_.store(kEnded, std::memory_order_release);
}

void RunnerClaim::finish_sole_issue() {
  // Only the exchange's holder gets here: nobody else writes kShared.
  wait_until([this] { return state_.load(std::memory_order_acquire) != kEnding; });
  wait_until([this] { return !issuer_running_.load(std::memory_order_acquire); });
  state_.store(kShared, std::memory_order_release);
}

}  // namespace weft::core
