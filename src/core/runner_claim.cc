#include "core/runner_claim.h"

#include <chrono>
#include <thread>

namespace weft::core {

void RunnerClaim::claim() {
  constexpr int kYields = 64;
  for (int tries = 0; !try_claim(); ++tries) {
    if (tries < kYields) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

}  // namespace weft::core
