// The timeline's ring and spill file, read alone and while a writer appends, and the clock that
// stamps its entries.
#include "core/op_timeline.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <random>
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
    // Until a wake that finds `stop` set: a thread first scheduled after the last append still
    // runs once.
    for (bool last = false; !last;) {
      segment_sealed.wait(seen);
      last = stop;
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

// Entries of every kind, each field drawn at random: what for_each gives back, from the spill
// file's encoded segments and from the ring, must match what was appended field by field.
std::vector<TimelineEntry> random_entries(std::size_t count, uint64_t seed) {
  static const char* const kOps[] = {"all_reduce", "broadcast", "send", "recv", "barrier"};
  static const char* const kAlgorithms[] = {"ring", "shm", "tree", ""};
  std::mt19937_64 random(seed);
  auto pick = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(random);
  };
  std::vector<TimelineEntry> entries;
  int64_t seq = 0;
  int64_t start = pick(0, int64_t{1} << 50);
  for (std::size_t i = 0; i < count; ++i) {
    TimelineEntry entry;
    // Mostly the next collective of the same kind, sometimes anything.
    bool repeat = i > 0 && pick(0, 3) != 0;
    const TimelineEntry* before = i > 0 ? &entries.back() : nullptr;
    seq = pick(0, 9) == 0 ? pick(-1, int64_t{1} << 40) : seq + 1;
    start += pick(0, 9) == 0 ? pick(-(int64_t{1} << 30), int64_t{1} << 40) : pick(0, 5000);
    entry.start_ticks = start;
    entry.seq = seq;
    entry.op = repeat ? before->op : kOps[pick(0, 4)];
    entry.algorithm =
        repeat ? before->algorithm : (pick(0, 4) == 0 ? nullptr : kAlgorithms[pick(0, 3)]);
    entry.bytes = repeat ? before->bytes : pick(-1, int64_t{1} << 45);
    entry.peer = repeat ? before->peer : static_cast<int32_t>(pick(-1, 1 << 20));
    entry.dtype = repeat ? before->dtype : static_cast<DType>(pick(0, 9));
    entry.outcome = static_cast<OpOutcome>(pick(0, 9) == 0 ? pick(1, 6) : 1);
    entry.end_ticks =
        start + (pick(0, 19) == 0 ? pick(int64_t{1} << 32, int64_t{1} << 45) : pick(0, 100'000));
    entries.push_back(entry);
  }
  return entries;
}

TEST(OpTimeline, RandomEntriesComeBackFieldByFieldFromTheSpillFileAndTheRing) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    testing::TempDir dir("timeline");
    std::atomic<uint32_t> segment_sealed{0};
    OpTimeline timeline(dir.path().string(), &segment_sealed);
    // Some segments spilled, the last ones still in the ring, the last one part full.
    const std::size_t count = 9 * OpTimeline::kSegmentEntries + 123 * seed;
    std::vector<TimelineEntry> entries = random_entries(count, seed);
    for (const TimelineEntry& entry : entries) timeline.append(entry);
    std::size_t visited = 0;
    timeline.for_each([&](const TimelineEntry& got) {
      ASSERT_LT(visited, entries.size());
      const TimelineEntry& want = entries[visited];
      EXPECT_EQ(got.start_ticks, want.start_ticks) << visited;
      EXPECT_EQ(got.end_ticks, want.end_ticks) << visited;
      EXPECT_EQ(got.seq, want.seq) << visited;
      EXPECT_EQ(got.bytes, want.bytes) << visited;
      EXPECT_EQ(got.op, want.op) << visited;
      EXPECT_EQ(got.algorithm, want.algorithm) << visited;
      EXPECT_EQ(got.peer, want.peer) << visited;
      EXPECT_EQ(got.dtype, want.dtype) << visited;
      EXPECT_EQ(got.outcome, want.outcome) << visited;
      ++visited;
    });
    EXPECT_EQ(visited, entries.size()) << "seed " << seed;
    EXPECT_GT(segment_sealed.load(), 4u);  // so the ring came round: spills were needed
  }
}

// A child forked from the process that made the timeline has a copy of it, and may append to
// it (a program's forked worker that uses the group by mistake): it must not write into the
// spill file it shares with its parent.
TEST(OpTimeline, AForkedChildLeavesItsParentsSpillFileAlone) {
  testing::TempDir dir("timeline");
  OpTimeline timeline(dir.path().string());
  const int64_t before_fork = 3 * static_cast<int64_t>(OpTimeline::kSegmentEntries) + 5;
  for (int64_t i = 0; i < before_fork; ++i) timeline.append(entry_numbered(i));
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char byte = 0;
    (void)!::read(go[0], &byte, 1);  // once the parent has spilled
    // Far round the ring: each spill would land where the parent's segments are.
    for (int64_t i = 0; i < 20 * static_cast<int64_t>(OpTimeline::kSegmentEntries); ++i) {
      timeline.append(entry_numbered(1'000'000 + i));
    }
    ::_exit(0);
  }
  for (int64_t i = before_fork; i < kManyEntries; ++i) timeline.append(entry_numbered(i));
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ::close(go[0]);
  ::close(go[1]);
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
