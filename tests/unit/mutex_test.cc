// util::TimedMutex: the lock DeadlineStore gives up at a deadline. Under ThreadSanitizer these
// also check that the tool sees its locks (scripts/sanitize.sh thread): std::timed_mutex's
// try_lock_until went unseen, and the counter below would have been reported as a race.
#include "util/mutex.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace weft::util {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(TimedMutex, TryLockUntilGivesUpAtTheDeadlineWhileAnotherThreadHoldsIt) {
  TimedMutex mutex;
  mutex.lock();
  bool taken = true;
  Clock::duration waited{};
  std::thread other([&] {
    const auto start = Clock::now();
    taken = mutex.try_lock_until(start + 200ms);
    waited = Clock::now() - start;
  });
  other.join();
  EXPECT_FALSE(taken);
  EXPECT_GE(waited, 200ms);
  mutex.unlock();
  if (mutex.try_lock()) {
    mutex.unlock();
  } else {
    ADD_FAILURE() << "a lock given up at its deadline left the mutex held";
  }
}

TEST(TimedMutex, TryLockUntilTakesTheLockOnceItIsFreed) {
  TimedMutex mutex;
  mutex.lock();
  bool taken = false;
  std::thread other([&] {
    if (mutex.try_lock_until(Clock::now() + 60s)) {
      taken = true;
      mutex.unlock();
    }
  });
  std::this_thread::sleep_for(50ms);
  const auto released = Clock::now();
  mutex.unlock();
  other.join();
  EXPECT_TRUE(taken);
  EXPECT_LT(Clock::now() - released, 30s) << "woken when freed, not at its deadline";
}

TEST(TimedMutex, EveryWayOfLockingExcludesTheOthers) {
  TimedMutex mutex;
  long counter = 0;  // guarded by mutex, unsynchronized otherwise
  constexpr int kThreads = 4;
  constexpr int kRounds = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        switch ((t + round) % 3) {
          case 0:
            mutex.lock();
            ++counter;
            mutex.unlock();
            break;
          case 1:
            while (!mutex.try_lock()) std::this_thread::yield();
            ++counter;
            mutex.unlock();
            break;
          default:
            if (mutex.try_lock_until(Clock::now() + 60s)) {
              ++counter;
              mutex.unlock();
            } else {
              ADD_FAILURE() << "not taken in 60 s";
            }
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(counter, long{kThreads} * kRounds);
}

}  // namespace
}  // namespace weft::util
