// The flight recorder's dump when a collective times out, and WEFT_TRACE's timeline, with
// ranks as threads (docs/observability.md).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "api/process_group_impl.h"
#include "support/temp_paths.h"
#include "support/thread_ranks.h"

namespace weft {
namespace {

using namespace std::chrono_literals;
using testing::run_ranks_leaving_in_turn;
using testing::TempDir;

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Sets an environment variable for the length of a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

// Both ranks run three all_reduces; then rank 0 calls a fourth (seq 3) with a 200 ms timeout
// that rank 1 never joins. Param: the algorithm ("" for the selector's).
class StuckAllReduce : public ::testing::TestWithParam<std::string> {};

TEST_P(StuckAllReduce, TheDumpNamesTheOpAndSeqWhereTheRankWasStuck) {
  TempDir dir("flight");
  ScopedEnv flight_dir("WEFT_FLIGHT_DIR", dir.path().string());
  std::atomic<bool> rank0_gave_up{false};
  std::atomic<bool> timed_out{false};
  run_ranks_leaving_in_turn(2, [&](ProcessGroup& group) {
    CollectiveOptions options;
    options.algorithm = GetParam();
    std::vector<float> data(2, 1.0f);
    for (int i = 0; i < 3; ++i) group.all_reduce(BufferView(data), ReduceOp::kSum, options);
    if (group.rank() == 1) {
      while (!rank0_gave_up.load()) std::this_thread::sleep_for(5ms);
      return;
    }
    options.timeout = 200ms;
    try {
      group.all_reduce(BufferView(data), ReduceOp::kSum, options);
    } catch (const Error& error) {
      timed_out = error.code() == ErrorCode::kTimeout;
    }
    rank0_gave_up = true;
    // In memory: the last op is the stuck one.
    auto records = api::communicator_of(group).recorder().flight_snapshot();
    ASSERT_EQ(records.size(), 4u);
    EXPECT_EQ(records.back().what.seq, 3);
    EXPECT_STREQ(records.back().what.op, "all_reduce");
    EXPECT_EQ(records.back().what.bytes, 8);
    EXPECT_EQ(records.back().outcome, core::OpOutcome::kTimeout);
    EXPECT_EQ(records[2].outcome, core::OpOutcome::kDone);
  });
  EXPECT_TRUE(timed_out) << "rank 0's all_reduce should have timed out";
  std::string dump = read_text(dir.path() / "rank0.txt");
  ASSERT_FALSE(dump.empty()) << "rank 0 wrote no dump into WEFT_FLIGHT_DIR";
  EXPECT_NE(dump.find("# weft flight recorder of rank 0: after timeout"), std::string::npos)
      << dump;
  // Oldest first; the stuck op last.
  for (int seq = 0; seq < 3; ++seq) {
    EXPECT_NE(dump.find("seq=" + std::to_string(seq) + " op=all_reduce bytes=8 dtype=float32"),
              std::string::npos)
        << dump;
  }
  std::size_t stuck = dump.find("seq=3 op=all_reduce bytes=8 dtype=float32");
  ASSERT_NE(stuck, std::string::npos) << dump;
  EXPECT_NE(dump.find("state=timeout", stuck), std::string::npos) << dump;
  EXPECT_LT(dump.find("seq=2 "), stuck) << "oldest first";
}

INSTANTIATE_TEST_SUITE_P(Algorithms, StuckAllReduce, ::testing::Values("", "ring"),
                         [](const auto& info) {
                           return info.param.empty() ? std::string("selected") : info.param;
                         });

// The launcher tells the recorder whether a call waited: a small all_reduce that waits for a
// late peer is dated at its end too, so its duration shows the wait.
TEST(FlightRecorder, ASmallCallThatWaitedForALatePeerIsDatedAtItsEnd) {
  run_ranks_leaving_in_turn(2, [&](ProcessGroup& group) {
    std::vector<float> data(2, 1.0f);
    group.all_reduce(BufferView(data));  // both ranks past the group's set-up
    if (group.rank() == 1) std::this_thread::sleep_for(60ms);
    group.all_reduce(BufferView(data));
    if (group.rank() != 0) return;
    auto records = api::communicator_of(group).recorder().flight_snapshot();
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records.back().outcome, core::OpOutcome::kDone);
    // Rank 0 waited about 60 ms; the coarse clock's ticks (at most 4 ms) take off at most 8.
    EXPECT_GE(records.back().end_ns - records.back().start_ns, 30'000'000);
  });
}

TEST(FlightRecorder, ZeroEntriesDisablesIt) {
  ScopedEnv entries("WEFT_FLIGHT_RECORDER", "0");
  run_ranks_leaving_in_turn(2, [&](ProcessGroup& group) {
    std::vector<float> data(2, 1.0f);
    group.all_reduce(BufferView(data));
    EXPECT_FALSE(api::communicator_of(group).recorder().flight_enabled());
    EXPECT_TRUE(api::communicator_of(group).recorder().flight_snapshot().empty());
  });
}

// What each rank ran, in order: the timeline must hold exactly these.
struct Expected {
  const char* op;
  int64_t seq;
  int64_t bytes;
};

TEST(Timeline, OneEventPerOpWithItsSeqOpAndBytes) {
  TempDir dir("trace");
  ScopedEnv trace("WEFT_TRACE", dir.path().string());
  const std::vector<Expected> expected = {
      {"all_reduce", 0, 4}, {"all_reduce", 1, 8},  {"all_reduce", 2, 12}, {"broadcast", 3, 400},
      {"barrier", 4, 0},    {"all_gather", 5, 16}, {"send", -1, 24},      {"recv", -1, 24},
  };
  run_ranks_leaving_in_turn(2, [&](ProcessGroup& group) {
    for (std::size_t n = 1; n <= 3; ++n) {
      std::vector<float> data(n, 1.0f);
      group.all_reduce(BufferView(data));
    }
    std::vector<int32_t> block(100, group.rank());
    group.broadcast(BufferView(block), 1);
    group.barrier();
    std::vector<double> mine(1, 1.0), all(2);
    group.all_gather(ConstBufferView(mine), BufferView(all));
    std::vector<int64_t> message(3, 7);
    // Rank 0 sends then receives; rank 1 the other way round: one send and one recv each.
    if (group.rank() == 0) {
      group.send(ConstBufferView(message), 1);
      group.recv(BufferView(message), 1);
    } else {
      group.recv(BufferView(message), 0);
      group.send(ConstBufferView(message), 0);
    }
  });
  for (int rank = 0; rank < 2; ++rank) {
    auto path = dir.path() / ("rank" + std::to_string(rank) + ".json");
    nlohmann::json trace;
    ASSERT_NO_THROW(trace = nlohmann::json::parse(read_text(path))) << path;
    EXPECT_EQ(trace["otherData"]["weft_rank"], rank);
    EXPECT_EQ(trace["otherData"]["clock_offset_us"].get<double>(), 0.0)
        << "ranks of one host share the steady clock";
    std::vector<nlohmann::json> ops;
    bool named = false;
    for (const auto& event : trace["traceEvents"]) {
      if (event["ph"] == "M" && event["name"] == "process_name") {
        named = event["args"]["name"] == "rank " + std::to_string(rank);
      }
      if (event["ph"] == "X") ops.push_back(event);
    }
    EXPECT_TRUE(named) << "a process_name record 'rank " << rank << "'";
    ASSERT_EQ(ops.size(), expected.size()) << trace.dump(1);
    // Collectives in call order; the send and recv of this rank in its own order.
    std::vector<Expected> mine = expected;
    if (rank == 1) std::swap(mine[6], mine[7]);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const auto& event = ops[i];
      SCOPED_TRACE("rank " + std::to_string(rank) + " event " + std::to_string(i));
      EXPECT_EQ(event["name"], mine[i].op);
      EXPECT_EQ(event["args"]["op"], mine[i].op);
      EXPECT_EQ(event["args"]["seq"], mine[i].seq);
      EXPECT_EQ(event["args"]["bytes"], mine[i].bytes);
      EXPECT_EQ(event["args"]["group"], "default");
      EXPECT_EQ(event["args"]["state"], "done");
      EXPECT_EQ(event["pid"], rank);
      EXPECT_GE(event["dur"].get<double>(), 0.0);
      EXPECT_GT(event["ts"].get<double>(), 0.0);
      if (mine[i].seq >= 0) {
        EXPECT_FALSE(event["args"]["algorithm"].get<std::string>().empty());
      }
      if (i > 0) {
        EXPECT_GE(event["ts"].get<double>(), ops[i - 1]["ts"].get<double>());
      }
    }
  }
}

}  // namespace
}  // namespace weft
