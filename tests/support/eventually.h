// eventually.h — polls a condition until it holds or a time limit passes: for a state another
// thread or process reaches with no event a test could wait on.
#pragma once

#include <chrono>
#include <thread>

namespace weft::testing {

// True as soon as `condition()` holds, checked every `interval`; false once `limit` has passed
// without it.
template <typename Condition>
bool eventually(Condition condition, std::chrono::milliseconds limit,
                std::chrono::milliseconds interval = std::chrono::milliseconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(interval);
  }
  return true;
}

}  // namespace weft::testing
