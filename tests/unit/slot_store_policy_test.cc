#include "transport/shm/slot_store_policy.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>

namespace weft {
namespace {

using transport::SlotStorePolicies;
using transport::SlotStorePolicy;
using transport::SlotStores;
using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;

// Runs calls of `piece` bytes on the leader, each taking `ordinary` or `streaming` by the kind
// the policy chose for it, 1 us apart (far below the retry interval), and returns how many of
// them streamed.
int run_calls(SlotStorePolicy& policy, Clock::time_point& now, std::size_t piece, int calls,
              microseconds ordinary, microseconds streaming) {
  int streamed = 0;
  for (int i = 0; i < calls; ++i) {
    bool streams = policy.streams(piece);
    streamed += streams;
    now += microseconds(1);
    policy.record(piece, streams, piece, streams ? streaming : ordinary, now);
  }
  return streamed;
}

TEST(SlotStorePolicy, SizeClassesDoubleFrom4KiB) {
  EXPECT_EQ(SlotStorePolicy::class_of(4096), 0);
  EXPECT_EQ(SlotStorePolicy::class_of(8191), 0);
  EXPECT_EQ(SlotStorePolicy::class_of(8192), 1);
  EXPECT_EQ(SlotStorePolicy::class_of(1 << 20), 8);
  EXPECT_EQ(SlotStorePolicy::class_of(std::size_t{1} << 40), SlotStorePolicy::kClasses - 1);
}

TEST(SlotStorePolicy, LearnsTheFasterKindAndFollowsWhenItChanges) {
  std::atomic<uint32_t> word{0};
  SlotStorePolicy leader(&word, true, SlotStores::kAdaptive);
  SlotStorePolicy member(&word, false, SlotStores::kAdaptive);
  Clock::time_point now{};
  const std::size_t piece = 64 * 1024;
  EXPECT_FALSE(member.streams(piece));  // ordinary until a trial says otherwise
  // Streaming is twice as fast: after the first period and one trial, both streams.
  run_calls(leader, now, piece, 60, microseconds(20), microseconds(10));
  EXPECT_TRUE(leader.streams(piece));
  EXPECT_TRUE(member.streams(piece));
  EXPECT_FALSE(member.streams(piece / 2));  // other classes are learned on their own
  EXPECT_FALSE(member.streams(SlotStorePolicy::kFromBytes - 1));
  // Now ordinary is faster: a later trial takes the group back.
  run_calls(leader, now, piece, 100, microseconds(5), microseconds(10));
  EXPECT_FALSE(member.streams(piece));
  // While a kind keeps winning, trials grow rare: few calls of the slower kind.
  int slower = run_calls(leader, now, piece, 4000, microseconds(5), microseconds(10));
  EXPECT_GT(slower, 0);
  EXPECT_LT(slower, 4000 / 20);
}

// When members outnumber cores, the scheduler delays a call now and then by far more than the
// kinds of store differ. Such calls must not decide: here every 13th call takes 5 ms.
TEST(SlotStorePolicy, CallsTheSchedulerDelayedDoNotDecide) {
  std::atomic<uint32_t> word{0};
  SlotStorePolicy leader(&word, true, SlotStores::kAdaptive);
  Clock::time_point now{};
  const std::size_t piece = 256 * 1024;
  auto run_delayed = [&](int calls, microseconds ordinary, microseconds streaming) {
    int streamed = 0;
    for (int i = 0; i < calls; ++i) {
      bool streams = leader.streams(piece);
      streamed += streams;
      now += microseconds(1);
      microseconds took = i % 13 == 12 ? microseconds(5000) : streams ? streaming : ordinary;
      leader.record(piece, streams, piece, took, now);
    }
    return streamed;
  };
  // Ordinary is faster: the delayed calls of either kind never take the group to streaming
  // for longer than a trial.
  int streamed = run_delayed(4000, microseconds(5), microseconds(10));
  EXPECT_LT(streamed, 4000 / 20);
  EXPECT_FALSE(leader.streams(piece));
  // Streaming becomes faster: the group follows despite the delays.
  run_delayed(200, microseconds(20), microseconds(10));
  EXPECT_TRUE(leader.streams(piece));
}

TEST(SlotStorePolicy, TriesTheOtherKindAgainAfterTheRetryInterval) {
  std::atomic<uint32_t> word{0};
  SlotStorePolicy leader(&word, true, SlotStores::kAdaptive);
  Clock::time_point now{};
  const std::size_t piece = 1 << 20;
  run_calls(leader, now, piece, 3, microseconds(5), microseconds(10));
  // Slow calls well inside one period: the retry interval starts the trial.
  now += SlotStorePolicy::kRetryAfter;
  leader.record(piece, false, piece, microseconds(5), now);
  EXPECT_TRUE(leader.streams(piece));
}

// The vCPUs move (docs/PERFORMANCE.md, "Two modes"): the chosen kind's calls turn much slower
// and the other kind is now faster. The group must follow within a few calls, not wait out the
// retry interval or a long period.
TEST(SlotStorePolicy, FollowsAChangeOfTheFasterKindWithinAFewCalls) {
  std::atomic<uint32_t> word{0};
  SlotStorePolicy leader(&word, true, SlotStores::kAdaptive);
  Clock::time_point now{};
  const std::size_t piece = 512 * 1024;
  // Ordinary wins long enough for the period to grow to its longest.
  run_calls(leader, now, piece, 6000, microseconds(100), microseconds(150));
  ASSERT_FALSE(leader.streams(piece));
  // Ordinary turns 3x slower, streaming 2x faster than ordinary now; 1 us apart, far inside the
  // retry interval and the period.
  int streamed = run_calls(leader, now, piece, 30, microseconds(300), microseconds(150));
  EXPECT_GT(streamed, 10);
  EXPECT_TRUE(leader.streams(piece));
  // Both kinds turn slower and the chosen one stays faster: it is kept after the trial.
  int slower = run_calls(leader, now, piece, 200, microseconds(900), microseconds(450));
  EXPECT_TRUE(leader.streams(piece));
  EXPECT_LT(200 - slower, 40);
}

// Calls of many milliseconds (16 MiB all_reduce): a trial of the slower kind every retry
// interval would cost a third of the time. Trials stay a small share of it.
TEST(SlotStorePolicy, LongCallsTryTheOtherKindRarely) {
  std::atomic<uint32_t> word{0};
  SlotStorePolicy leader(&word, true, SlotStores::kAdaptive);
  Clock::time_point now{};
  const std::size_t piece = 512 * 1024;
  int streamed = 0;
  const int calls = 2000;
  for (int i = 0; i < calls; ++i) {
    bool streams = leader.streams(piece);
    streamed += streams;
    microseconds took(streams ? 20000 : 10000);
    now += took;
    leader.record(piece, streams, piece, took, now);
  }
  EXPECT_FALSE(leader.streams(piece));
  EXPECT_GT(streamed, 0);
  EXPECT_LT(streamed, calls / 10);
}

// Calls of 10 ms (4 members, 16 MiB, slow vCPU mode): a benchmark's invocation makes about 15
// of them. The group must find the faster kind within half of them, and follow a change of
// it as fast; calls of 100 us keep the longer sample (their times are noisier).
TEST(SlotStorePolicy, LongCallsDecideWithFewerCalls) {
  const std::size_t piece = 1 << 20;
  std::atomic<uint32_t> word{0};
  std::unique_ptr<SlotStorePolicy> leader;
  Clock::time_point now{};
  // Calls timed as `now` passes, each taking its kind's time; returns how many streamed.
  auto run_timed = [&](int calls, microseconds ordinary, microseconds streaming) {
    int streamed = 0;
    for (int i = 0; i < calls; ++i) {
      bool streams = leader->streams(piece);
      streamed += streams;
      microseconds took = streams ? streaming : ordinary;
      now += took;
      leader->record(piece, streams, piece, took, now);
    }
    return streamed;
  };
  auto fresh_leader = [&] {
    word = 0;
    leader = std::make_unique<SlotStorePolicy>(&word, true, SlotStores::kAdaptive);
  };
  // Streaming twice as fast: of an invocation's first 15 calls, long ones run ordinary stores
  // for 4 (one not counted, three timed), short ones for 9.
  fresh_leader();
  EXPECT_GE(run_timed(15, microseconds(10000), microseconds(5000)), 10);
  fresh_leader();
  EXPECT_LE(run_timed(15, microseconds(100), microseconds(50)), 6);

  // The faster kind changes (the vCPUs moved) while calls are long: two slow calls show it,
  // a trial of four follows, and the group streams from then on.
  fresh_leader();
  run_timed(100, microseconds(6000), microseconds(9000));
  int settle = 0;
  while (leader->streams(piece) && settle++ < 20)
    run_timed(1, microseconds(6000), microseconds(9000));
  ASSERT_FALSE(leader->streams(piece));
  EXPECT_GE(run_timed(10, microseconds(14000), microseconds(8000)), 7);
  EXPECT_TRUE(leader->streams(piece));
}

// One class spans calls of many sizes (a sweep moves from 1 MiB calls to 16 MiB calls whose
// pieces are alike): they compare by time per byte filled, not per call.
TEST(SlotStorePolicy, ComparesCallsOfDifferentSizesPerByte) {
  std::atomic<uint32_t> word{0};
  SlotStorePolicy leader(&word, true, SlotStores::kAdaptive);
  Clock::time_point now{};
  const std::size_t piece = 512 * 1024;
  // Streaming is 1.5x faster per byte, but its calls happen to be 10x larger: by time per call
  // it would look slower.
  for (int i = 0; i < 400; ++i) {
    bool streams = leader.streams(piece);
    now += microseconds(1);
    std::size_t filled = streams ? 10 * piece : piece;
    microseconds took(streams ? 10 * 100 : 150);
    leader.record(piece, streams, filled, took, now);
  }
  EXPECT_TRUE(leader.streams(piece));
}

TEST(SlotStorePolicy, FixedSettingsIgnoreTimings) {
  std::atomic<uint32_t> word{0};
  SlotStorePolicy ordinary(&word, true, SlotStores::kOrdinary);
  SlotStorePolicy streaming(&word, true, SlotStores::kStreaming);
  Clock::time_point now{};
  EXPECT_EQ(run_calls(ordinary, now, 1 << 16, 200, microseconds(50), microseconds(1)), 0);
  EXPECT_EQ(word.load(), 0u);
  EXPECT_EQ(run_calls(streaming, now, 1 << 16, 200, microseconds(1), microseconds(50)), 200);
  EXPECT_FALSE(streaming.streams(100));  // small pieces always go the ordinary way
}

TEST(SlotStorePolicy, OnlyTheLeaderLearns) {
  std::atomic<uint32_t> word{0};
  SlotStorePolicy member(&word, false, SlotStores::kAdaptive);
  Clock::time_point now{};
  EXPECT_EQ(run_calls(member, now, 1 << 16, 200, microseconds(50), microseconds(1)), 0);
  EXPECT_EQ(word.load(), 0u);
}

TEST(SlotStorePolicies, EachOpLearnsItsOwnKind) {
  // The caller's numbering of its kinds of call.
  constexpr int kBroadcast = 2, kAllReduce = 4, kAllGather = 5;
  // A job alternating broadcast (streaming twice as fast) and all_reduce (ordinary twice as
  // fast, and 4x the time per byte), with slot pieces of one size class.
  std::atomic<uint32_t> words[SlotStorePolicies::kKinds] = {};
  SlotStorePolicies leader(words, true, SlotStores::kAdaptive);
  SlotStorePolicies member(words, false, SlotStores::kAdaptive);
  Clock::time_point now{};
  const std::size_t piece = 256 * 1024;
  int broadcasts_streamed = 0, all_reduces_streamed = 0;
  for (int i = 0; i < 400; ++i) {
    bool streams = leader.streams(kBroadcast, piece);
    broadcasts_streamed += i >= 200 && streams;
    now += microseconds(1);
    leader.record(kBroadcast, piece, streams, piece, streams ? microseconds(10) : microseconds(20),
                  now);
    streams = leader.streams(kAllReduce, piece);
    all_reduces_streamed += i >= 200 && streams;
    now += microseconds(1);
    leader.record(kAllReduce, piece, streams, piece, streams ? microseconds(160) : microseconds(80),
                  now);
  }
  EXPECT_TRUE(member.streams(kBroadcast, piece));
  EXPECT_FALSE(member.streams(kAllReduce, piece));
  EXPECT_FALSE(member.streams(kAllGather, piece));  // not learned yet: ordinary
  // Of the last 200 calls of each, only trials took the slower kind.
  EXPECT_GT(broadcasts_streamed, 180);
  EXPECT_LT(all_reduces_streamed, 20);
}

TEST(SlotStorePolicies, AKindOutOfRangeSharesTheLastPolicy) {
  std::atomic<uint32_t> words[SlotStorePolicies::kKinds] = {};
  SlotStorePolicies leader(words, true, SlotStores::kStreaming);
  const std::size_t piece = 256 * 1024;
  EXPECT_TRUE(leader.streams(-1, piece));
  EXPECT_TRUE(leader.streams(SlotStorePolicies::kKinds, piece));
  leader.record(SlotStorePolicies::kKinds + 7, piece, true, piece, microseconds(10),
                Clock::time_point{});
}

}  // namespace
}  // namespace weft
