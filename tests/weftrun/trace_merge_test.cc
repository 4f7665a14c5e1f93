// weftrun's merge of the ranks' timelines (tools/weftrun/trace_merge.h) on files written here in
// weft's rank-file format: every event lands on rank 0's clock starting at 0, a file that is
// not a rank's trace is named, and a long timeline is merged a line at a time.
#include "trace_merge.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace weft::run {
namespace {

namespace fs = std::filesystem;

class TraceDir {
 public:
  TraceDir() : path_(fs::temp_directory_path() / ("weft-merge-" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TraceDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string event(int rank, double ts, int seq) {
  return "{\"name\":\"all_reduce\",\"cat\":\"collective\",\"ph\":\"X\",\"ts\":" +
         std::to_string(ts) + ",\"dur\":1.5,\"pid\":" + std::to_string(rank) +
         ",\"tid\":1,\"args\":{\"seq\":" + std::to_string(seq) +
         ",\"op\":\"all_reduce\",\"bytes\":8,\"group\":\"g \\\"ts\\\":9\"}}";
}

// A rank's file as src/core/trace_writer.cc writes it, with `events` all_reduces from first_ts
// on, one microsecond apart.
void write_rank_file(const fs::path& dir, int rank, double offset_us, double first_ts, int events) {
  std::ofstream out(dir / ("rank" + std::to_string(rank) + ".json"));
  out << "{\"otherData\":{\"weft_rank\":" << rank
      << ",\"weft_world_size\":2,\"clock_offset_us\":" << offset_us << "},\n\"traceEvents\":[\n";
  out << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" << rank << ",\"args\":{\"name\":\"rank "
      << rank << "\"}}";
  for (int i = 0; i < events; ++i) out << ",\n" << event(rank, first_ts + i, i);
  out << "\n]}\n";
}

TEST(TraceMerge, EveryEventLandsOnRankZerosClockFromZero) {
  TraceDir dir;
  write_rank_file(dir.path(), 0, 0.0, 1000.0, 3);
  write_rank_file(dir.path(), 1, -250.0, 1100.0, 3);  // its clock runs 250 us ahead of rank 0's
  MergeResult merged = merge_rank_traces(dir.path().string());
  EXPECT_EQ(merged.ranks, 2);
  EXPECT_EQ(merged.events, 6);
  std::ifstream in(merged.path);
  nlohmann::json trace = nlohmann::json::parse(in);
  std::vector<std::pair<int, double>> seen;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    seen.emplace_back(e["pid"].get<int>(), e["ts"].get<double>());
    EXPECT_EQ(e["args"]["group"], "g \"ts\":9");  // a string that looks like the key is kept
  }
  // Rank 1's first op at 1100 - 250 = 850 on rank 0's clock is the job's first.
  std::vector<std::pair<int, double>> expected = {{0, 150}, {0, 151}, {0, 152},
                                                  {1, 0},   {1, 1},   {1, 2}};
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(trace["otherData"]["weft_ranks"], 2);
}

TEST(TraceMerge, AFileThatIsNotARanksTraceIsNamed) {
  TraceDir dir;
  write_rank_file(dir.path(), 0, 0.0, 10.0, 2);
  std::ofstream(dir.path() / "rank1.json") << "{\"traceEvents\":[]}";
  try {
    merge_rank_traces(dir.path().string());
    ADD_FAILURE() << "merged";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("rank1.json is not a rank's trace"), std::string::npos)
        << error.what();
  }
}

long peak_rss_kb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

TEST(TraceMerge, ALongTimelineIsMergedALineAtATime) {
  TraceDir dir;
  const int events = 400'000;  // about 90 MB of JSON
  write_rank_file(dir.path(), 0, 0.0, 5.0, events);
  const long before = peak_rss_kb();
  MergeResult merged = merge_rank_traces(dir.path().string());
  EXPECT_EQ(merged.events, events);
  // Reading the file whole took about ten times its size.
  EXPECT_LT(peak_rss_kb() - before, 20 * 1024) << "KB more at the peak";
  EXPECT_GT(fs::file_size(merged.path), fs::file_size(dir.path() / "rank0.json") / 2);
}

}  // namespace
}  // namespace weft::run
