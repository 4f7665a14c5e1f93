// What a group's recorder costs one operation: OpRecorder::begin() and end() of an 8-byte
// collective in a loop, with the flight recorder off (WEFT_FLIGHT_RECORDER=0), on (the
// default) and with the timeline (WEFT_TRACE), in one run so that the three see the same
// machine. The timeline's spill thread runs as in a job; the JSON, written when the recorder goes,
// is not (the trace's directory is removed first, so nothing is written at all).
//
//   weft-recorder-bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// The spill thread's own share is encode_segment's time per item (plus a write per segment).
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/op_recorder.h"
#include "weft/log.h"

namespace weft::core {
namespace {

enum class Mode { kOff, kFlight, kTrace };

void record_collectives(benchmark::State& state, Mode mode) {
  weft::set_log_level(weft::LogLevel::kError);  // the removed trace directory's warning
  std::string dir;
  if (mode == Mode::kTrace) {
    char pattern[] = "/tmp/weft-recorder-bench-XXXXXX";
    dir = ::mkdtemp(pattern);
    ::setenv("WEFT_TRACE", dir.c_str(), 1);
  } else {
    ::unsetenv("WEFT_TRACE");
  }
  ::setenv("WEFT_FLIGHT_RECORDER", mode == Mode::kOff ? "0" : "64", 1);
  int world = 0;  // the trace is keyed by a World's address: any address will do
  auto recorder = std::make_unique<OpRecorder>("bench", &world, 0, 1);
  OpStart what;
  what.op = "all_reduce";
  what.algorithm = "shm";
  what.bytes = 8;
  what.dtype = DType::kFloat32;
  const int64_t burst = state.range(0);
  int64_t seq = 0;
  for (auto _ : state) {
    what.seq = seq++;
    OpRecorder::Token token = recorder->begin(what);
    benchmark::DoNotOptimize(token);
    recorder->end(token, OpOutcome::kDone);
    if (burst > 0 && seq % burst == 0) {
      state.PauseTiming();
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      state.ResumeTiming();
    }
  }
  if (!dir.empty()) std::filesystem::remove_all(dir);
  recorder.reset();
  ::unsetenv("WEFT_TRACE");
}

// What the spill thread spends per op: encoding a full segment of repeated collectives.
void encode_segment(benchmark::State& state) {
  std::vector<TimelineEntry> entries(OpTimeline::kSegmentEntries);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    int64_t start = 5'000'000'000 + static_cast<int64_t>(i) * 900;
    entries[i] = {start, start + 700,     static_cast<int64_t>(i), 8, "all_reduce", "shm",
                  -1,    DType::kFloat32, OpOutcome::kDone};
  }
  std::vector<uint8_t> encoded(entries.size() * TimelineEncoder::kMaxEncodedBytes);
  for (auto _ : state) {
    TimelineEncoder encoder;
    std::size_t used = 0;
    for (const TimelineEntry& entry : entries) used += encoder.encode(entry, encoded.data() + used);
    benchmark::DoNotOptimize(used);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(entries.size()));
}
BENCHMARK(encode_segment);

// An op's two clock reads around work that does not wait on them (a chain of multiplications
// standing for a collective's own few tens of nanoseconds): the coarse clock's read overlaps
// the work, the time-stamp counter's does not, so a counter read costs an op more than its
// cost in a loop of reads alone. Compared with no clock at all.
enum class Clock { kNone, kCoarse, kCounter };

__attribute__((noinline)) int64_t stand_in_work(int64_t x) {
  for (int i = 0; i < 40; ++i) x = x * 3 + i;
  return x;
}

void clock_reads_around_work(benchmark::State& state, Clock clock) {
  const TimelineClock counter(true);
  auto read = [&](int64_t fallback) {
    if (clock == Clock::kCoarse) return coarse_now_ns();
    if (clock == Clock::kCounter) return counter.ticks();
    return fallback;
  };
  std::vector<TimelineEntry> ring(OpTimeline::kSegmentEntries);
  int64_t chain = 0;
  int64_t op = 0;
  for (auto _ : state) {
    TimelineEntry& entry = ring[static_cast<std::size_t>(op) % ring.size()];
    entry.start_ticks = read(op);
    chain = stand_in_work(chain + entry.start_ticks);
    entry.end_ticks = read(op);
    entry.seq = op++;
  }
  benchmark::DoNotOptimize(chain);
}
BENCHMARK_CAPTURE(clock_reads_around_work, none, Clock::kNone);
BENCHMARK_CAPTURE(clock_reads_around_work, coarse, Clock::kCoarse);
BENCHMARK_CAPTURE(clock_reads_around_work, counter, Clock::kCounter);

// Arg 0: back to back, many times the rate of the fastest collective, which no spill thread
// keeps up with: the appends then encode and spill the timeline themselves. Arg 256: bursts of
// 256 ops with an untimed pause between them, in which the spill thread catches up, as in a
// job. CPU time is the calling thread's: what an operation waits for.
BENCHMARK_CAPTURE(record_collectives, off, Mode::kOff)->Arg(0)->Arg(256)->MinTime(0.1);
BENCHMARK_CAPTURE(record_collectives, flight, Mode::kFlight)->Arg(0)->Arg(256)->MinTime(0.1);
BENCHMARK_CAPTURE(record_collectives, trace, Mode::kTrace)->Arg(0)->Arg(256)->MinTime(0.1);

}  // namespace
}  // namespace weft::core

BENCHMARK_MAIN();
