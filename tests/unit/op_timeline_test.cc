// The timeline's ring and spill file, read alone and while a writer appends, and the clock that
// stamps its entries.
#include "core/op_timeline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/timeline_clock.h"
#include "support/temp_paths.h"

namespace weft::core {
namespace {

// An entry whose every field follows from its index, so a reader can tell a torn one.
TimelineEntry entry_numbered(int64_t index) {
  TimelineEntry entry;
  entry.start_ticks = index;
  entry.end_ticks = index + 1;
  entry.seq = index;
  entry.bytes = 8 * index;
  entry.op = index % 2 == 0 ? "all_reduce" : "broadcast";
  entry.peer = static_cast<int32_t>(index % 7);
  entry.outcome = OpOutcome::kDone;
  return entry;
}

bool consistent(const TimelineEntry& entry) {
  int64_t index = entry.seq;
  return entry.start_ticks == index && entry.end_ticks == index + 1 && entry.bytes == 8 * index &&
         entry.peer == index % 7 &&
         std::string(entry.op) == (index % 2 == 0 ? "all_reduce" : "broadcast");
}

std::vector<int64_t> visited_seqs(const OpTimeline& timeline) {
  std::vector<int64_t> seqs;
  timeline.for_each([&](const TimelineEntry& entry) {
    EXPECT_TRUE(consistent(entry)) << "entry " << entry.seq;
    seqs.push_back(entry.seq);
  });
  return seqs;
}

// Enough entries for many segments, round the ring several times.
constexpr int64_t kManyEntries = 400'000;

TEST(OpTimeline, KeepsEveryAppendInOrderThroughManySpills) {
  testing::TempDir dir("timeline");
  OpTimeline timeline(dir.path().string());
  for (int64_t i = 0; i < kManyEntries; ++i) timeline.append(entry_numbered(i));
  std::vector<int64_t> seqs = visited_seqs(timeline);
  ASSERT_EQ(seqs.size(), static_cast<std::size_t>(kManyEntries));
  for (int64_t i = 0; i < kManyEntries; ++i) ASSERT_EQ(seqs[static_cast<std::size_t>(i)], i);
  EXPECT_EQ(timeline.dropped(), 0u);
  // The spill file has no name: the directory stays empty.
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(OpTimeline, NothingAppendedIsNothingVisited) {
  testing::TempDir dir("timeline");
  OpTimeline timeline(dir.path().string());
  EXPECT_TRUE(visited_seqs(timeline).empty());
}

TEST(OpTimeline, WithoutASpillFileKeepsWhatTheRingHoldsAndCountsTheRest) {
  OpTimeline timeline("/nonexistent/weft/timeline/dir");
  for (int64_t i = 0; i < kManyEntries; ++i) timeline.append(entry_numbered(i));
  std::vector<int64_t> seqs = visited_seqs(timeline);
  ASSERT_FALSE(seqs.empty());
  for (std::size_t i = 0; i < seqs.size(); ++i) ASSERT_EQ(seqs[i], static_cast<int64_t>(i));
  EXPECT_LT(seqs.size(), static_cast<std::size_t>(kManyEntries));
  EXPECT_EQ(timeline.dropped(), static_cast<uint64_t>(kManyEntries) - seqs.size());
}

TEST(OpTimeline, AReaderDuringAppendsSeesNoTornEntryAndKeepsOrder) {
  testing::TempDir dir("timeline");
  OpTimeline timeline(dir.path().string());
  const int64_t total = 10 * kManyEntries;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int64_t i = 0; i < total; ++i) timeline.append(entry_numbered(i));
    done = true;
  });
  int reads = 0;
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done && reads < 2000 && std::chrono::steady_clock::now() < give_up) {
    std::vector<int64_t> seqs = visited_seqs(timeline);
    // A prefix of what was appended, with nothing missing or repeated.
    for (std::size_t i = 0; i < seqs.size(); ++i) ASSERT_EQ(seqs[i], static_cast<int64_t>(i));
    ++reads;
  }
  writer.join();
  EXPECT_EQ(visited_seqs(timeline).size(), static_cast<std::size_t>(total));
}

// As RankTrace runs it: a spill thread woken by each sealed segment, the appends spilling only
// when they catch up with it.
TEST(OpTimeline, ASpillThreadWokenBySegmentsKeepsEveryEntry) {
  testing::TempDir dir("timeline");
  std::atomic<uint32_t> segment_sealed{0};
  OpTimeline timeline(dir.path().string(), &segment_sealed);
  std::atomic<bool> stop{false};
  int wakes = 0;
  std::thread spiller([&] {
    uint32_t seen = 0;
    while (!stop) {
      segment_sealed.wait(seen);
      seen = segment_sealed.load();
      timeline.spill_sealed_segments();
      ++wakes;
    }
  });
  for (int64_t i = 0; i < kManyEntries; ++i) timeline.append(entry_numbered(i));
  stop = true;
  segment_sealed.fetch_add(1);
  segment_sealed.notify_one();
  spiller.join();
  // Segments were sealed and signalled as the appends went (how often the spiller ran in
  // between is up to the scheduler: on a busy machine it may run only at the end).
  EXPECT_GT(segment_sealed.load(), 2u);
  EXPECT_GE(wakes, 1);
  std::vector<int64_t> seqs = visited_seqs(timeline);
  ASSERT_EQ(seqs.size(), static_cast<std::size_t>(kManyEntries));
  for (int64_t i = 0; i < kManyEntries; ++i) ASSERT_EQ(seqs[static_cast<std::size_t>(i)], i);
}

TEST(TimelineClock, TheFitIsExactOnALine) {
  TimelineClock::Pair first{1000, 5'000'000};
  TimelineClock::Pair last{1000 + 3'000'000, 5'000'000 + 1'000'000};  // 3 ticks per ns
  EXPECT_EQ(TimelineClock::to_steady_ns(1000, first, last), 5'000'000);
  EXPECT_EQ(TimelineClock::to_steady_ns(1000 + 300, first, last), 5'000'100);
  EXPECT_EQ(TimelineClock::to_steady_ns(1000 + 3'000'000, first, last), 6'000'000);
  // Two pairs taken at the same tick: ticks are read as nanoseconds from the first.
  EXPECT_EQ(TimelineClock::to_steady_ns(1500, first, first), 5'000'500);
}

// Both kinds of clock, whichever this machine uses: a tick read between two steady reads
// converts to a time between them (to within the fit's error over a short span).
TEST(TimelineClock, TicksConvertToTheSteadyClock) {
  for (bool cpu_cycles : {false, TimelineClock::counts_cpu_cycles()}) {
    TimelineClock clock(cpu_cycles);
    TimelineClock::Pair first = clock.pair();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    int64_t before = steady_now_ns();
    int64_t ticks = clock.ticks();
    int64_t after = steady_now_ns();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    TimelineClock::Pair last = clock.pair();
    int64_t converted = TimelineClock::to_steady_ns(ticks, first, last);
    const int64_t slack = 20'000;  // 20 us: the pairs' own uncertainty, scaled over 10 ms
    EXPECT_GE(converted, before - slack) << "cpu_cycles " << cpu_cycles;
    EXPECT_LE(converted, after + slack) << "cpu_cycles " << cpu_cycles;
  }
}

}  // namespace
}  // namespace weft::core
