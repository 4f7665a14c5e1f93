#include "core/runner_claim.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace weft::core {

void RunnerClaim::claim() {
  constexpr int kYields = 64;
  constexpr std::chrono::microseconds kFirstSleep{50}, kLongestSleep{1000};
  std::chrono::microseconds sleep = kFirstSleep;
  for (int tries = 0; !try_claim(); ++tries) {
    if (tries < kYields) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(sleep);
      sleep = std::min(2 * sleep, kLongestSleep);
    }
  }
}

}  // namespace weft::core
