#include "core/runner_claim.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace weft {
namespace {

using core::HeldRunnerClaim;
using core::RunnerClaim;

TEST(RunnerClaim, OneHolderAtATime) {
  RunnerClaim claim;
  ASSERT_TRUE(claim.try_claim());
  EXPECT_FALSE(claim.try_claim());
  claim.release();
  EXPECT_TRUE(claim.try_claim());
  claim.release();
}

TEST(RunnerClaim, AHeldClaimIsReleasedWhenItLeavesScope) {
  RunnerClaim claim;
  {
    ASSERT_TRUE(claim.try_claim());
    HeldRunnerClaim held(claim);
    EXPECT_FALSE(claim.try_claim());
  }
  EXPECT_TRUE(claim.try_claim());
  claim.release();
}

// Threads that claim, bump a plain counter and release never lose an increment: the claim
// orders what one holder wrote before the next holder reads it.
TEST(RunnerClaim, ThreadsThatClaimNeverOverlap) {
  RunnerClaim claim;
  long counter = 0;
  std::atomic<int> inside{0};
  std::atomic<bool> overlapped{false};
  constexpr int kThreads = 4;
  constexpr int kRounds = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        // Half the threads wait for the claim, half try and go round again, as callers do.
        if (t % 2 == 0) {
          claim.claim();
        } else if (!claim.try_claim()) {
          --i;
          std::this_thread::yield();
          continue;
        }
        HeldRunnerClaim held(claim);
        if (inside.fetch_add(1) != 0) overlapped = true;
        ++counter;
        inside.fetch_sub(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_FALSE(overlapped.load());
  EXPECT_EQ(counter, long{kThreads} * kRounds);
}

}  // namespace
}  // namespace weft
