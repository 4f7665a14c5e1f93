// weft-trace summary on a small trace whose numbers are known: runs the real binary.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/temp_paths.h"

namespace {

using weft::testing::TempDir;

std::string run_command(const std::string& command, int* status) {
  FILE* pipe = ::popen(command.c_str(), "r");
  std::string out;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  *status = ::pclose(pipe);
  return out;
}

std::string event(int rank, const char* op, int seq, int bytes, double ts, double dur) {
  std::ostringstream text;
  text << R"({"name":")" << op << R"(","ph":"X","ts":)" << ts << R"(,"dur":)" << dur << R"(,"pid":)"
       << rank << R"(,"tid":1,"args":{"seq":)" << seq << R"(,"op":")" << op << R"(","bytes":)"
       << bytes << R"(,"group":"default"}})";
  return text.str();
}

// One row of the summary's table.
struct SummaryRow {
  std::string op, p50, p90, p99, max, slowest, slowest_mean, last, last_calls;
  long count = 0, bytes = 0;
};

SummaryRow parse_row(const std::string& line) {
  SummaryRow row;
  std::istringstream in(line);
  in >> row.op >> row.count >> row.bytes >> row.p50 >> row.p90 >> row.p99 >> row.max >>
      row.slowest >> row.slowest_mean >> row.last >> row.last_calls;
  return row;
}

// Two ranks' files as ranks write them: rank 1's clock is 1000 us behind rank 0's.
//   all_reduce: 10 calls per rank, 8 bytes. Rank 0's take 10, 20, ..., 100 us; rank 1's 1 us.
//   Rank 1 starts each call 50 us after rank 0 (on rank 0's clock): it is the one the other
//   waits for, so it arrives last while rank 0 has the higher mean.
//   broadcast: one call on rank 0 only, 100 bytes, 7 us.
void write_known_trace(const std::filesystem::path& dir) {
  std::ofstream rank0(dir / "rank0.json");
  rank0 << R"({"otherData":{"weft_rank":0,"clock_offset_us":0},"traceEvents":[)";
  rank0 << R"({"name":"process_name","ph":"M","pid":0,"args":{"name":"rank 0"}})";
  for (int i = 0; i < 10; ++i)
    rank0 << "," << event(0, "all_reduce", i, 8, 1000.0 * i, 10.0 * (i + 1));
  rank0 << "," << event(0, "broadcast", 10, 100, 20000, 7) << "]}";
  std::ofstream rank1(dir / "rank1.json");
  rank1 << R"({"otherData":{"weft_rank":1,"clock_offset_us":1000},"traceEvents":[)";
  for (int i = 0; i < 10; ++i) {
    rank1 << (i ? "," : "") << event(1, "all_reduce", i, 8, 1000.0 * i + 50 - 1000, 1.0);
  }
  rank1 << "]}";
}

TEST(WeftTrace, SummaryOfAKnownTrace) {
  TempDir dir;
  write_known_trace(dir.path());
  int status = 0;
  std::string out =
      run_command(std::string(WEFT_TRACE_PATH) + " summary " + dir.path().string(), &status);
  ASSERT_EQ(status, 0) << out;
  std::istringstream lines(out);
  std::string header, all_reduce, broadcast;
  std::getline(lines, header);
  std::getline(lines, all_reduce);
  std::getline(lines, broadcast);
  EXPECT_NE(header.find("p50_us"), std::string::npos) << out;
  // 20 calls, 160 bytes. Durations: ten 1s and 10..100: p50 is the 10th smallest (1), p90 the
  // 18th (80), p99 the 20th (100). Rank 0's mean is 55; rank 1 started last in all 10 calls.
  SummaryRow row = parse_row(all_reduce);
  EXPECT_EQ(row.op, "all_reduce");
  EXPECT_EQ(row.count, 20);
  EXPECT_EQ(row.bytes, 160);
  EXPECT_EQ(row.p50, "1.0");
  EXPECT_EQ(row.p90, "80.0");
  EXPECT_EQ(row.p99, "100.0");
  EXPECT_EQ(row.max, "100.0");
  EXPECT_EQ(row.slowest, "0");
  EXPECT_EQ(row.slowest_mean, "(55.0)");
  EXPECT_EQ(row.last, "1");
  EXPECT_EQ(row.last_calls, "(10/10)");
  EXPECT_EQ(broadcast.substr(0, 9), "broadcast") << out;
  EXPECT_NE(broadcast.find(" 1 "), std::string::npos) << broadcast;
  EXPECT_NE(broadcast.find(" 100 "), std::string::npos) << broadcast;
  EXPECT_NE(broadcast.find("7.0"), std::string::npos) << broadcast;
}

// A trace much larger than the memory weft-trace is given: read as a stream, it still fits. The
// whole document is one line (weft writes an event per line), which a line-based reader would
// refuse; otherData still comes first, as the reader requires. 400,000 calls of all_reduce on 2
// ranks take ~55 MB of JSON; parsed whole, several times that.
TEST(WeftTrace, AnyLayoutIsReadAsAStreamInBoundedMemory) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's runtime reserves more address space than the limit set here";
#endif
  TempDir dir;
  constexpr int kCalls = 200000;
  {
    std::ofstream trace(dir.path() / "trace.json");
    trace << R"({"otherData":{"clock_offset_us":0},"traceEvents":[)";
    for (int i = 0; i < kCalls; ++i) {
      for (int rank = 0; rank < 2; ++rank) {
        trace << (i || rank ? "," : "")
              << event(rank, "all_reduce", i, 8, 10.0 * (i % 1000) + rank, rank == 0 ? 2.0 : 4.0);
      }
    }
    trace << "]}";
  }
  ASSERT_GT(std::filesystem::file_size(dir.path() / "trace.json"), 50u << 20);
  int status = 0;
  // 160 MB of address space in all, the program and its libraries included.
  std::string out = run_command("ulimit -v 160000 && " + std::string(WEFT_TRACE_PATH) +
                                    " summary " + dir.path().string() + " 2>&1",
                                &status);
  ASSERT_EQ(status, 0) << out;
  std::istringstream lines(out);
  std::string header, all_reduce;
  std::getline(lines, header);
  std::getline(lines, all_reduce);
  SummaryRow row = parse_row(all_reduce);
  EXPECT_EQ(row.op, "all_reduce");
  EXPECT_EQ(row.count, 2 * kCalls);
  EXPECT_EQ(row.bytes, 16L * kCalls);
  EXPECT_EQ(row.p50, "2.0");  // the 200,000th of 400,000 durations, half 2 and half 4
  EXPECT_EQ(row.max, "4.0");
  EXPECT_EQ(row.slowest, "1");
  EXPECT_EQ(row.last, "1");  // rank 1 starts each call 1 us after rank 0
  EXPECT_EQ(row.last_calls, "(200000/200000)");
}

TEST(WeftTrace, NamesADirectoryWithoutTraces) {
  TempDir dir;
  int status = 0;
  std::string out = run_command(
      std::string(WEFT_TRACE_PATH) + " summary " + dir.path().string() + " 2>&1", &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("holds no trace.json and no rank<R>.json"), std::string::npos) << out;
}

}  // namespace
