// Small broadcasts and reduces on one host run as eager rounds (transport/shm/local_window.h): the
// members that only write go on without waiting for the readers, up to a ring of
// LocalWindow::kEagerDepth calls ahead. These tests wrap that ring many times with every root,
// with members that fall behind, and mixed with ordinary rounds, and check that a mismatch
// still reaches every rank: the reader at once, the writer at its next collective.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <thread>
#include <vector>

#include "support/errors.h"
#include "support/thread_ranks.h"
#include "transport/shm/local_window.h"

namespace weft {
namespace {

using testing::error_of;
using testing::run_ranks;
using testing::ThreadRanksOptions;

constexpr int kCalls = 5 * static_cast<int>(transport::LocalWindow::kEagerDepth);

// What rank r contributes to call i: distinct per rank, call and element.
int32_t value(int rank, int call, std::size_t element) {
  return (call + 1) * 1000 + rank * 10 + static_cast<int32_t>(element);
}

// Sleeps now and then on one rank at a time, so that the others run far ahead of it.
void maybe_fall_behind(int me, int call, int world) {
  if (call % 37 == 0 && (call / 37) % world == me) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
}

TEST(EagerRounds, BroadcastsFromEveryRootWrapTheRingWithStragglers) {
  for (int world : {2, 3, 4}) {
    run_ranks(world, [world](ProcessGroup& group) {
      const int me = group.rank();
      for (int call = 0; call < kCalls; ++call) {
        maybe_fall_behind(me, call, world);
        const int root = (call / 50) % world;  // long stretches: roots run ahead
        // 16 bytes (the most an eager round carries), 4 bytes and nothing.
        const std::size_t count = std::vector<std::size_t>{4, 1, 0}[call % 3];
        std::vector<int32_t> data(count);
        for (std::size_t i = 0; i < count; ++i) data[i] = me == root ? value(root, call, i) : -1;
        group.broadcast(data, root);
        for (std::size_t i = 0; i < count; ++i) {
          ASSERT_EQ(data[i], value(root, call, i)) << "call " << call << ", element " << i;
        }
      }
    });
  }
}

TEST(EagerRounds, ReducesToEveryRootWrapTheRingWithStragglers) {
  for (int world : {2, 3, 4}) {
    run_ranks(world, [world](ProcessGroup& group) {
      const int me = group.rank();
      for (int call = 0; call < kCalls; ++call) {
        maybe_fall_behind(me, call, world);
        const int root = (call / 50) % world;
        std::vector<int64_t> sums(2);
        for (std::size_t i = 0; i < sums.size(); ++i) sums[i] = value(me, call, i);
        std::vector<float> maxima = {static_cast<float>(value(me, call, 0))};
        group.reduce(sums, root, ReduceOp::kSum);
        group.reduce(maxima, root, ReduceOp::kMax);
        for (std::size_t i = 0; i < sums.size(); ++i) {
          int64_t want = 0;
          for (int r = 0; r < world; ++r) want += value(r, call, i);
          ASSERT_EQ(sums[i], me == root ? want : value(me, call, i)) << "call " << call;
        }
        float want_max = static_cast<float>(value(me == root ? world - 1 : me, call, 0));
        ASSERT_EQ(maxima[0], want_max) << "call " << call;
      }
    });
  }
}

TEST(EagerRounds, MixWithOrdinaryRoundsAndLargerCalls) {
  run_ranks(3, [](ProcessGroup& group) {
    const int me = group.rank();
    for (int call = 0; call < 2 * static_cast<int>(transport::LocalWindow::kEagerDepth) + 5;
         ++call) {
      maybe_fall_behind(me, call, 3);
      std::vector<int32_t> small(2, me == 1 ? value(1, call, 0) : 0);
      group.broadcast(small, 1);
      ASSERT_EQ(small[0], value(1, call, 0));
      if (call % 10 == 0) {
        std::vector<int32_t> total(5, value(me, call, 0));  // 20 bytes: an ordinary round
        group.all_reduce(total);
        ASSERT_EQ(total[4], value(0, call, 0) + value(1, call, 0) + value(2, call, 0));
      }
      if (call % 25 == 0) {
        std::vector<int32_t> large(1000, me == 2 ? value(2, call, 0) : 0);
        group.broadcast(large, 2);
        ASSERT_EQ(large[999], value(2, call, 0));
      }
    }
  });
}

TEST(EagerRounds, AReaderThatStallsIsATimeoutForARootThatRanAhead) {
  ThreadRanksOptions options;
  options.timeout = std::chrono::milliseconds(500);
  run_ranks(
      2,
      [](ProcessGroup& group) {
        std::vector<int32_t> data(1, 7);
        group.broadcast(data, 0);  // maps the window
        if (group.rank() == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1200));
          return;
        }
        auto started = std::chrono::steady_clock::now();
        Error error = error_of([&] {
          for (uint32_t call = 0; call <= transport::LocalWindow::kEagerDepth; ++call) {
            group.broadcast(data, 0);
          }
        });
        EXPECT_EQ(error.code(), ErrorCode::kTimeout) << error.what();
        EXPECT_NE(std::string(error.what()).find("rank 1 had not reached"), std::string::npos)
            << error.what();
        EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(1100));
      },
      options);
}

TEST(EagerRounds, TwoRootsAreAMismatchAtTheNextCollective) {
  // Both ranks believe they are the root: neither reads, so neither can tell at the call.
  run_ranks(2, [](ProcessGroup& group) {
    std::vector<int32_t> data(2, group.rank());
    group.broadcast(data, group.rank());
    EXPECT_EQ(data[0], group.rank());  // a root's buffer is left alone
    Error error = error_of([&] { group.barrier(); });
    EXPECT_EQ(error.code(), ErrorCode::kMismatch) << error.what();
    std::string what = error.what();
    EXPECT_NE(what.find("root=0"), std::string::npos) << what;
    EXPECT_NE(what.find("root=1"), std::string::npos) << what;
  });
}

TEST(EagerRounds, TwoRootsAreAMismatchWhenTheirLinesComeRoundAgain) {
  // Only eager calls follow: the stamps are compared when the ring reuses the lines.
  run_ranks(2, [](ProcessGroup& group) {
    std::vector<int32_t> data(2, group.rank());
    group.broadcast(data, group.rank());
    int calls = 0;
    Error error = error_of([&] {
      for (; calls < 2 * static_cast<int>(transport::LocalWindow::kEagerDepth); ++calls) {
        group.broadcast(data, 0);
      }
    });
    EXPECT_LE(calls, static_cast<int>(transport::LocalWindow::kEagerDepth));
    // The rank that compares first reports the mismatch; the other may hear of it (an abort
    // naming it) before its own comparison comes round.
    EXPECT_TRUE(error.code() == ErrorCode::kMismatch || error.code() == ErrorCode::kAborted)
        << error.what();
    std::string what = error.what();
    EXPECT_NE(what.find("root=0"), std::string::npos) << what;
    EXPECT_NE(what.find("root=1"), std::string::npos) << what;
  });
}

// A loop of alike eager calls keeps a full stamp only where its run starts and at checkpoints;
// a mismatch deep in such a run still names both sides' calls exactly: their counts and the
// call's sequence number.
TEST(EagerRounds, AMismatchDeepInARunOfAlikeCallsNamesBothCallsExactly) {
  constexpr int kAlike = 100;  // past a checkpoint (every 64 calls) and between two
  run_ranks(2, [](ProcessGroup& group) {
    std::vector<int32_t> data(2, 5);
    for (int call = 0; call < kAlike; ++call) group.broadcast(data, 0);
    if (group.rank() == 1) {
      std::vector<int32_t> more(3, 5);
      Error error = error_of([&] { group.broadcast(more, 0); });
      EXPECT_EQ(error.code(), ErrorCode::kMismatch) << error.what();
      std::string what = error.what();
      EXPECT_NE(what.find("broadcast(count=2"), std::string::npos) << what;
      EXPECT_NE(what.find("broadcast(count=3"), std::string::npos) << what;
      // Rank 0's call follows from its run's stamp: the run's seq plus the calls since.
      EXPECT_NE(what.find("count=2, int32, root=0) as collective #" + std::to_string(kAlike)),
                std::string::npos)
          << what;
    } else {
      group.broadcast(data, 0);  // wrote and went on
      Error error = error_of([&] { group.barrier(); });
      EXPECT_NE(error.code(), ErrorCode::kTimeout) << error.what();
    }
  });
}

// A timeout names the last call of a member that stopped inside a run of alike eager calls,
// though that call has no full stamp of its own.
TEST(EagerRounds, ATimeoutNamesTheLastCallOfARunAMemberStoppedIn) {
  constexpr int kAlike = 100;
  ThreadRanksOptions options;
  options.timeout = std::chrono::milliseconds(500);
  run_ranks(
      2,
      [](ProcessGroup& group) {
        std::vector<int32_t> data(1, 7);
        for (int call = 0; call < kAlike; ++call) group.broadcast(data, 0);
        if (group.rank() == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1200));
          return;
        }
        Error error = error_of([&] { group.barrier(); });
        EXPECT_EQ(error.code(), ErrorCode::kTimeout) << error.what();
        EXPECT_NE(
            std::string(error.what()).find("last seen in broadcast #" + std::to_string(kAlike - 1)),
            std::string::npos)
            << error.what();
      },
      options);
}

TEST(EagerRounds, AWriterAmongLongTimeReadersIsStillCompared) {
  // Ranks 1 and 2 only read for two rings, so the comparisons skip their entries; then rank 1
  // writes (a reduce) where rank 0 broadcasts: the two writers must still be compared.
  run_ranks(3, [](ProcessGroup& group) {
    const int me = group.rank();
    std::vector<int32_t> data(2, me);
    for (int call = 0; call < 2 * static_cast<int>(transport::LocalWindow::kEagerDepth) + 7;
         ++call) {
      group.broadcast(data, 0);
    }
    if (me == 1) {
      group.reduce(data, 0);
    } else {
      group.broadcast(data, 0);
    }
    // Rank 2 read rank 0's call and matched it: it learns from the others, at the barrier or
    // (when it got through before they found the mismatch) at its next collective.
    Error error = error_of([&] {
      group.barrier();
      if (me == 2) group.barrier();
    });
    EXPECT_TRUE(error.code() == ErrorCode::kMismatch || error.code() == ErrorCode::kAborted)
        << "rank " << me << ": " << error.what();
    if (me != 2) {
      std::string what = error.what();
      EXPECT_NE(what.find("reduce("), std::string::npos) << what;
      EXPECT_NE(what.find("broadcast("), std::string::npos) << what;
    }
  });
}

TEST(EagerRounds, AReaderOfAnotherRootFailsAtOnceAndTheOthersAtTheirNextCall) {
  run_ranks(3, [](ProcessGroup& group) {
    const int me = group.rank();
    std::vector<float> data(4, static_cast<float>(me));
    if (me == 2) {
      // Reads rank 1's line, which rank 1 published as a reader of root 0.
      Error error = error_of([&] { group.broadcast(data, 1); });
      EXPECT_EQ(error.code(), ErrorCode::kMismatch) << error.what();
      EXPECT_NE(std::string(error.what()).find("root=1"), std::string::npos) << error.what();
      EXPECT_EQ(data[0], 2.0f) << "a failed broadcast must not write the buffer";
      return;
    }
    group.broadcast(data, 0);
    EXPECT_EQ(data[0], 0.0f);
    Error error = error_of([&] { group.all_reduce(data); });
    EXPECT_TRUE(error.code() == ErrorCode::kMismatch || error.code() == ErrorCode::kAborted)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("root=1"), std::string::npos) << error.what();
  });
}

TEST(EagerRounds, AReduceWithAnotherCountFailsOnTheRoot) {
  run_ranks(2, [](ProcessGroup& group) {
    std::vector<float> data(group.rank() == 0 ? 2 : 3, 1.0f);
    if (group.rank() == 0) {
      Error error = error_of([&] { group.reduce(data, 0); });
      EXPECT_EQ(error.code(), ErrorCode::kMismatch) << error.what();
      std::string what = error.what();
      EXPECT_NE(what.find("reduce(count=2"), std::string::npos) << what;
      EXPECT_NE(what.find("reduce(count=3"), std::string::npos) << what;
      EXPECT_EQ(data[0], 1.0f) << "a failed reduce must not write the buffer";
    } else {
      group.reduce(data, 0);  // wrote and went on
      Error error = error_of([&] { group.barrier(); });
      EXPECT_NE(error.code(), ErrorCode::kTimeout) << error.what();
    }
  });
}

// With no spin (WEFT_SPIN_US=0) every wait sleeps on a futex, and every publish must wake it:
// ordinary rounds, eager calls, barriers. One rank comes late to each call (by kLate, so the
// other is asleep by then). A lost wake-up is a sleep until the next check
// (transport/shm/local_window.cc, kCheckInterval: 10 ms): if every wait lost it, the calls below
// would take 3 * kSleepCalls * 10 ms; the bound is a quarter of that.
TEST(EagerRounds, WaitersThatSleepAreWokenByEveryPublish) {
  constexpr int kSleepCalls = 200;
  constexpr auto kLate = std::chrono::microseconds(200);
  setenv("WEFT_SPIN_US", "0", 1);
  auto started = std::chrono::steady_clock::now();
  run_ranks(2, [&](ProcessGroup& group) {
    const int me = group.rank();
    for (int call = 0; call < kSleepCalls; ++call) {
      const int root = call % 2;
      std::vector<int32_t> data = {me == root ? value(root, call, 0) : -1};
      if (me == root) std::this_thread::sleep_for(kLate);  // the reader sleeps
      group.broadcast(data, root);
      ASSERT_EQ(data[0], value(root, call, 0)) << "call " << call;
      std::vector<int64_t> sums = {value(me, call, 0), value(me, call, 1)};
      if (me != root) std::this_thread::sleep_for(kLate);
      group.all_reduce(sums);
      for (std::size_t i = 0; i < sums.size(); ++i) {
        ASSERT_EQ(sums[i], int64_t{value(0, call, i)} + value(1, call, i)) << "call " << call;
      }
      if (me == root) std::this_thread::sleep_for(kLate);
      group.barrier();
    }
  });
  unsetenv("WEFT_SPIN_US");
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_LT(took, 3 * kSleepCalls * std::chrono::milliseconds(10) / 4)
      << "sleeping waiters were not woken by the publishes they waited for";
}
}  // namespace
}  // namespace weft
