// What a group's recorder costs one operation: OpRecorder::begin() and end() of an 8-byte
// collective in a loop, with the flight recorder off (WEFT_FLIGHT_RECORDER=0), on (the
// default) and with the timeline (WEFT_TRACE), in one run so that the three see the same
// machine. The timeline's spill thread runs as in a job, and the CPU time counted is the
// process's, so its share is in the figures; the JSON, written when the recorder goes, is not
// (the trace's directory is removed first, so nothing is written at all).
//
//   weft-recorder-bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

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
  int64_t seq = 0;
  for (auto _ : state) {
    what.seq = seq++;
    OpRecorder::Token token = recorder->begin(what);
    benchmark::DoNotOptimize(token);
    recorder->end(token, OpOutcome::kDone);
  }
  if (!dir.empty()) std::filesystem::remove_all(dir);
  recorder.reset();
  ::unsetenv("WEFT_TRACE");
}

BENCHMARK_CAPTURE(record_collectives, off, Mode::kOff)->MeasureProcessCPUTime();
BENCHMARK_CAPTURE(record_collectives, flight, Mode::kFlight)->MeasureProcessCPUTime();
BENCHMARK_CAPTURE(record_collectives, trace, Mode::kTrace)->MeasureProcessCPUTime();

}  // namespace
}  // namespace weft::core

BENCHMARK_MAIN();
