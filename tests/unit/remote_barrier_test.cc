#include "util/remote_barrier.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace weft {
namespace {

// The store-buffering litmus test, with its two halves as LocalWindow uses them: one side
// stores and loads with only a compiler barrier between, the other stores, runs the remote
// barrier, and loads. Both loads missing the other side's store is what the barrier forbids.
TEST(RemoteBarrier, NoStoreBufferingAcrossTheHandshake) {
  if (!util::enable_remote_barriers()) GTEST_SKIP() << "this kernel offers no membarrier";
  ASSERT_TRUE(util::enable_remote_barriers());  // the first answer is kept
  constexpr int kTrials = 20'000;
  alignas(64) std::atomic<int> fast_word{0};
  alignas(64) std::atomic<int> rare_word{0};
  alignas(64) std::atomic<int> started{0};
  // Per trial, whether each side's load missed the other side's store.
  std::vector<char> fast_missed(kTrials + 1), rare_missed(kTrials + 1);
  auto start_together = [&](int trial) {
    started.fetch_add(1);
    while (started.load() < 2 * trial) {
    }
  };
  std::thread fast([&] {
    for (int trial = 1; trial <= kTrials; ++trial) {
      start_together(trial);
      fast_word.store(trial, std::memory_order_relaxed);
      std::atomic_signal_fence(std::memory_order_seq_cst);
      fast_missed[trial] = rare_word.load(std::memory_order_relaxed) < trial;
    }
  });
  int barrier_failures = 0;
  for (int trial = 1; trial <= kTrials; ++trial) {
    start_together(trial);
    rare_word.store(trial, std::memory_order_relaxed);
    if (!util::remote_barrier()) ++barrier_failures;
    rare_missed[trial] = fast_word.load(std::memory_order_relaxed) < trial;
  }
  fast.join();
  int both_missed = 0, one_missed = 0;
  for (int trial = 1; trial <= kTrials; ++trial) {
    both_missed += fast_missed[trial] && rare_missed[trial];
    one_missed += fast_missed[trial] != rare_missed[trial];
  }
  EXPECT_EQ(barrier_failures, 0);
  EXPECT_EQ(both_missed, 0) << "of " << kTrials << " trials (" << one_missed
                            << " with one side missing)";
}

}  // namespace
}  // namespace weft
