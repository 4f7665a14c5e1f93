// The flight recorder's ring and the line it dumps.
#include "core/flight_recorder.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "core/op_record_text.h"
#include "core/op_recorder.h"

namespace weft::core {
namespace {

OpStart op_numbered(int64_t seq) {
  OpStart what;
  what.op = seq % 2 == 0 ? "all_reduce" : "broadcast";
  what.algorithm = "ring";
  what.seq = seq;
  what.bytes = 8 * seq;
  what.dtype = DType::kFloat64;
  what.peer = seq % 2 == 0 ? -1 : 1;
  return what;
}

TEST(FlightRecorder, KeepsExactlyTheLastNOpsOldestFirst) {
  FlightRecorder recorder(4);
  for (int64_t seq = 0; seq < 10; ++seq) {
    uint64_t index = recorder.begin(op_numbered(seq), 1000 * seq);
    EXPECT_EQ(index, static_cast<uint64_t>(seq + 1));
    // The last op stays running.
    if (seq < 9)
      recorder.end(index, seq == 8 ? OpOutcome::kTimeout : OpOutcome::kDone, 1000 * seq + 7);
  }
  std::vector<OpRecord> kept = recorder.snapshot();
  ASSERT_EQ(kept.size(), 4u);
  for (std::size_t i = 0; i < kept.size(); ++i) {
    int64_t seq = 6 + static_cast<int64_t>(i);
    const OpRecord& record = kept[i];
    EXPECT_EQ(record.index, static_cast<uint64_t>(seq + 1));
    EXPECT_EQ(record.what.seq, seq);
    EXPECT_STREQ(record.what.op, seq % 2 == 0 ? "all_reduce" : "broadcast");
    EXPECT_STREQ(record.what.algorithm, "ring");
    EXPECT_EQ(record.what.bytes, 8 * seq);
    EXPECT_EQ(record.what.dtype, DType::kFloat64);
    EXPECT_EQ(record.what.peer, seq % 2 == 0 ? -1 : 1);
    EXPECT_EQ(record.start_ns, 1000 * seq);
  }
  EXPECT_EQ(kept[0].outcome, OpOutcome::kDone);
  EXPECT_EQ(kept[0].end_ns, 6007);
  EXPECT_EQ(kept[2].outcome, OpOutcome::kTimeout);
  EXPECT_EQ(kept[3].outcome, OpOutcome::kRunning);
  EXPECT_EQ(kept[3].end_ns, 0);
}

TEST(FlightRecorder, NumberedOpsKeepTheLastNByTheirNumbers) {
  FlightRecorder recorder(3);
  for (int64_t seq = 0; seq < 7; ++seq) {
    uint64_t index = recorder.begin_numbered(static_cast<uint64_t>(seq) + 1, op_numbered(seq), seq);
    EXPECT_EQ(index, static_cast<uint64_t>(seq) + 1);
    recorder.end(index, OpOutcome::kDone, seq + 1);
  }
  std::vector<OpRecord> kept = recorder.snapshot();
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].what.seq, 4);
  EXPECT_EQ(kept[1].what.seq, 5);
  EXPECT_EQ(kept[2].what.seq, 6);
  EXPECT_EQ(kept[2].outcome, OpOutcome::kDone);
  EXPECT_EQ(kept[2].end_ns, 7);
}

TEST(FlightRecorder, FewerOpsThanSlotsAreAllKept) {
  FlightRecorder recorder(8);
  EXPECT_TRUE(recorder.snapshot().empty());
  recorder.end(recorder.begin(op_numbered(0), 5), OpOutcome::kDone, 9);
  recorder.begin(op_numbered(1), 10);
  std::vector<OpRecord> kept = recorder.snapshot();
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].what.seq, 0);
  EXPECT_EQ(kept[1].what.seq, 1);
}

TEST(FlightRecorder, AnEndAfterItsSlotWasReusedChangesNothing) {
  FlightRecorder recorder(2);
  uint64_t old = recorder.begin(op_numbered(0), 1);
  recorder.begin(op_numbered(1), 2);
  recorder.begin(op_numbered(2), 3);  // reuses old's slot
  recorder.end(old, OpOutcome::kFailed, 4);
  std::vector<OpRecord> kept = recorder.snapshot();
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[1].what.seq, 2);
  EXPECT_EQ(kept[1].outcome, OpOutcome::kRunning);
}

TEST(FlightRecorder, DisabledRecordsNothing) {
  FlightRecorder recorder(0);
  EXPECT_FALSE(recorder.enabled());
  EXPECT_EQ(recorder.begin(op_numbered(0), 1), 0u);
  recorder.end(0, OpOutcome::kDone, 2);
  EXPECT_TRUE(recorder.snapshot().empty());
}

TEST(FlightRecorder, ThreadsRecordingAtOnceEachGetTheirOwnSlot) {
  FlightRecorder recorder(4000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        recorder.end(recorder.begin(op_numbered(t * 1000 + i), i), OpOutcome::kDone, i + 1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<OpRecord> kept = recorder.snapshot();
  ASSERT_EQ(kept.size(), 4000u);
  std::vector<bool> seen(4000);
  for (const OpRecord& record : kept) {
    EXPECT_EQ(record.outcome, OpOutcome::kDone);
    seen[record.what.seq] = true;
  }
  for (int seq = 0; seq < 4000; ++seq) EXPECT_TRUE(seen[seq]) << seq;
}

TEST(OpRecordText, OneLineWithEveryField) {
  OpRecord record;
  record.what = op_numbered(6);
  record.index = 7;
  record.start_ns = 2'000'000;
  record.end_ns = 2'005'000;
  record.outcome = OpOutcome::kDone;
  char text[512];
  TextBuffer out(text, sizeof text);
  format_op_record(out, record, "default", 3, 3'000'000);
  EXPECT_EQ(std::string(out.data(), out.size()),
            "rank=3 group=default n=7 seq=6 op=all_reduce bytes=48 dtype=float64 algo=ring "
            "peer=-1 start_us=2000 age_us=1000 dur_us=5 state=done");
  record.outcome = OpOutcome::kRunning;
  record.what.algorithm = nullptr;
  TextBuffer running(text, sizeof text);
  format_op_record(running, record, "g", 0, 2'000'000);
  EXPECT_NE(std::string(running.data(), running.size()).find("algo=- "), std::string::npos);
  EXPECT_NE(std::string(running.data(), running.size()).find("dur_us=-1 state=running"),
            std::string::npos);
}

// While the timeline runs the recorder is given its clock's ticks: copies read them as steady
// nanoseconds, as the dumps need.
TEST(FlightRecorder, TicksAreCopiedAsSteadyTime) {
  TimelineClock clock = TimelineClock::best();
  FlightRecorder recorder(4);
  recorder.count_in_ticks(clock, clock.pair());
  int64_t before = steady_now_ns();
  uint64_t index = recorder.begin(op_numbered(0), clock.ticks());
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  recorder.end(index, OpOutcome::kDone, clock.ticks());
  int64_t after = steady_now_ns();
  recorder.begin(op_numbered(1), clock.ticks());  // still running
  std::vector<OpRecord> kept = recorder.snapshot();
  ASSERT_EQ(kept.size(), 2u);
  const int64_t slack = 20'000;  // the fit's error over a few milliseconds, generously
  EXPECT_GE(kept[0].start_ns, before - slack);
  EXPECT_GE(kept[0].end_ns - kept[0].start_ns, 2'000'000 - slack);
  EXPECT_LE(kept[0].end_ns, after + slack);
  EXPECT_EQ(kept[1].end_ns, 0);  // running: no end to convert
  EXPECT_GE(kept[1].start_ns, kept[0].end_ns - slack);
}

// A small collective that never waited past a spin is dated once: its end is its start. One
// that waited, or moved more than kUndatedEndBytes, reads the clock again at its end.
TEST(OpRecorder, OnlyACollectiveThatWaitedOrIsLargeReadsTheClockAtItsEnd) {
  int world = 0;
  OpRecorder recorder("dating", &world, 0, 1);
  if (recorder.trace() != nullptr) GTEST_SKIP() << "WEFT_TRACE is set: every end reads the clock";
  ASSERT_TRUE(recorder.flight_enabled());
  auto run = [&](int64_t seq, int64_t bytes, bool waited) {
    OpStart what = op_numbered(seq);
    what.bytes = bytes;
    OpRecorder::Token token = recorder.begin(what);
    std::this_thread::sleep_for(std::chrono::milliseconds(12));
    recorder.end(token, OpOutcome::kDone, waited);
  };
  run(0, 8, false);
  run(1, 8, true);
  run(2, OpRecorder::kUndatedEndBytes, false);
  run(3, OpRecorder::kUndatedEndBytes + 1, false);
  std::vector<OpRecord> kept = recorder.flight_snapshot();
  ASSERT_EQ(kept.size(), 4u);
  // The coarse clock moves in ticks of at most 4 ms: 12 ms apart reads differ by 8 or more.
  const int64_t at_least = 7'000'000;
  EXPECT_EQ(kept[0].end_ns, kept[0].start_ns);
  EXPECT_GE(kept[1].end_ns - kept[1].start_ns, at_least);
  EXPECT_EQ(kept[2].end_ns, kept[2].start_ns);
  EXPECT_GE(kept[3].end_ns - kept[3].start_ns, at_least);
  for (const OpRecord& record : kept) EXPECT_EQ(record.outcome, OpOutcome::kDone);
}

TEST(OpRecordText, TruncatesAtTheBufferEnd) {
  char text[8];
  TextBuffer out(text, sizeof text);
  out.text("abcdef").number(-12345);
  EXPECT_EQ(std::string(out.data(), out.size()), "abcdef-1");
}

}  // namespace
}  // namespace weft::core
