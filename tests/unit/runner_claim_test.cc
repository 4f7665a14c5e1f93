#include "core/runner_claim.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "util/remote_barrier.h"

namespace weft {
namespace {

using core::HeldRunnerClaim;
using core::RunnerClaim;
using Hold = RunnerClaim::Hold;

// The claim of a thread alone: plain stores where the kernel offers remote barriers.
Hold alone() { return util::enable_remote_barriers() ? Hold::kAsSoleIssuer : Hold::kExchanged; }

Hold try_claim_on_another_thread(RunnerClaim& claim) {
  return std::async(std::launch::async, [&] { return claim.try_claim(); }).get();
}

TEST(RunnerClaim, TheFirstThreadToIssueClaimsAlone) {
  RunnerClaim claim;
  for (int i = 0; i < 3; ++i) {
    Hold hold = claim.try_claim();
    EXPECT_EQ(hold, alone());
    claim.release(hold);
  }
}

TEST(RunnerClaim, AnotherThreadsCallEndsTheSoleIssueForGood) {
  RunnerClaim claim;
  claim.release(claim.try_claim());
  std::promise<void> release;
  std::promise<Hold> taken;
  std::thread other([&] {
    Hold hold = claim.try_claim();
    taken.set_value(hold);
    release.get_future().wait();
    claim.release(hold);
  });
  EXPECT_EQ(taken.get_future().get(), Hold::kExchanged);
  EXPECT_EQ(claim.try_claim(), Hold::kNone);  // the first thread too has to exchange now
  release.set_value();
  other.join();
  Hold hold = claim.try_claim();
  EXPECT_EQ(hold, Hold::kExchanged);
  claim.release(hold);
}

TEST(RunnerClaim, AnotherThreadQueueingEndsTheSoleIssue) {
  RunnerClaim claim;
  claim.release(claim.try_claim());
  std::async(std::launch::async, [&] { claim.before_queueing(); }).get();
  claim.claim();  // as the worker would
  EXPECT_EQ(claim.try_claim(), Hold::kNone);
  claim.release(Hold::kExchanged);
}

TEST(RunnerClaim, TheSoleIssuerQueueingKeepsItsPlainClaim) {
  RunnerClaim claim;
  claim.before_queueing();
  claim.claim();  // the worker runs the queued call...
  claim.release(Hold::kExchanged);
  Hold hold = claim.try_claim();  // ...and the issuer runs here once its queue is idle
  EXPECT_EQ(hold, alone());
  claim.release(hold);
}

TEST(RunnerClaim, AnotherThreadWaitsForTheSoleIssuersCallInProgress) {
  if (!util::enable_remote_barriers()) GTEST_SKIP() << "no remote barriers: nobody claims alone";
  RunnerClaim claim;
  Hold mine = claim.try_claim();
  ASSERT_EQ(mine, Hold::kAsSoleIssuer);
  std::atomic<bool> released{false};
  auto other = std::async(std::launch::async, [&] {
    Hold hold = claim.try_claim();
    bool after = released.load();
    claim.release(hold);
    return std::make_pair(hold, after);
  });
  EXPECT_EQ(other.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  released = true;
  claim.release(mine);
  auto [hold, after_release] = other.get();
  EXPECT_EQ(hold, Hold::kExchanged);
  EXPECT_TRUE(after_release);
}

// A thread that only queues a call while the sole issuer runs one does not wait for it; the
// worker that runs the queued call does.
TEST(RunnerClaim, QueueingFromAnotherThreadLeavesTheWaitToTheWorker) {
  if (!util::enable_remote_barriers()) GTEST_SKIP() << "no remote barriers: nobody claims alone";
  RunnerClaim claim;
  Hold mine = claim.try_claim();
  ASSERT_EQ(mine, Hold::kAsSoleIssuer);
  auto queued = std::async(std::launch::async, [&] { claim.before_queueing(); });
  ASSERT_EQ(queued.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "queueing waited for the sole issuer's call";
  std::atomic<bool> released{false};
  auto worker = std::async(std::launch::async, [&] {
    claim.claim();
    bool after = released.load();
    claim.release(Hold::kExchanged);
    return after;
  });
  EXPECT_EQ(worker.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  released = true;
  claim.release(mine);
  EXPECT_TRUE(worker.get());
  EXPECT_EQ(claim.try_claim(), Hold::kExchanged);  // the sole issue has ended for good
  claim.release(Hold::kExchanged);
}

TEST(RunnerClaim, AClaimIsReleasedWhenItLeavesScope) {
  RunnerClaim claim;
  claim.release(try_claim_on_another_thread(claim));  // now everyone exchanges
  {
    Hold hold = claim.try_claim();
    ASSERT_EQ(hold, Hold::kExchanged);
    HeldRunnerClaim held(claim, hold);
    EXPECT_EQ(try_claim_on_another_thread(claim), Hold::kNone);
  }
  Hold hold = try_claim_on_another_thread(claim);
  EXPECT_EQ(hold, Hold::kExchanged);
  claim.release(hold);
}

// A sole issuer claims over and over while other threads join, some as callers that try, some
// as a worker that waits for the claim of a call they queued. A plain counter that they all
// bump loses no increment: the claim orders what one holder wrote before the next reads it.
TEST(RunnerClaim, ThreadsThatClaimNeverOverlap) {
  RunnerClaim claim;
  long counter = 0;
  std::atomic<int> inside{0};
  std::atomic<bool> overlapped{false};
  std::atomic<bool> others_may_start{false};
  constexpr int kThreads = 4;
  constexpr int kRounds = 2000;
  auto bump = [&] {
    if (inside.fetch_add(1) != 0) overlapped = true;
    ++counter;
    inside.fetch_sub(1);
  };
  auto caller = [&] {
    for (int i = 0; i < kRounds; ++i) {
      Hold hold = claim.try_claim();
      if (hold == Hold::kNone) {
        --i;
        std::this_thread::yield();
        continue;
      }
      HeldRunnerClaim held(claim, hold);
      bump();
      if (i == kRounds / 4) others_may_start = true;
    }
  };
  auto worker = [&] {
    for (int i = 0; i < kRounds; ++i) {
      claim.before_queueing();
      claim.claim();
      HeldRunnerClaim held(claim, Hold::kExchanged);
      bump();
    }
  };
  std::vector<std::thread> threads;
  threads.emplace_back(caller);  // the sole issuer, until the others start
  while (!others_may_start) std::this_thread::yield();
  for (int t = 1; t < kThreads; ++t) {
    if (t % 2 == 0) {
      threads.emplace_back(caller);
    } else {
      threads.emplace_back(worker);
    }
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_FALSE(overlapped.load());
  EXPECT_EQ(counter, long{kThreads} * kRounds);
}

}  // namespace
}  // namespace weft
