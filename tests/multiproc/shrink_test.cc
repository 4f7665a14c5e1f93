// Ranks as processes: survivors of killed ranks shrink their group and compute on with the
// members still alive; a member too late for the shrink is left out; abort() from another
// thread releases a rank's blocked calls. The ranks check their own results against sums
// computed by a plain loop (shrink_rank.cc); here the test checks that each said so.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "support/child_processes.h"
#include "weft/tcp_store_server.h"

namespace weft {
namespace {

using testing::ChildProcess;
using testing::ChildResult;

// The store is served by the test, so that it outlives any rank that is killed.
struct Job {
  std::unique_ptr<TcpStoreServer> store = std::make_unique<TcpStoreServer>();
  std::vector<std::unique_ptr<ChildProcess>> ranks;

  void start(const std::string& scenario, int world_size,
             std::map<std::string, std::string> extra = {}) {
    for (int rank = 0; rank < world_size; ++rank) {
      std::map<std::string, std::string> env = {
          {"RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(world_size)},
          {"WEFT_STORE_ADDR", "127.0.0.1:" + std::to_string(store->port())},
          {"MASTER_ADDR", "127.0.0.1"},
          {"WEFT_TIMEOUT", "30s"},
      };
      for (auto& [key, value] : extra) env[key] = value;
      ranks.push_back(std::make_unique<ChildProcess>(
          std::vector<std::string>{WEFT_SHRINK_RANK_PATH, scenario}, env));
    }
  }
};

// "SHRUNK <ms> ..." -> ms, or -1.
long shrink_ms(const ChildResult& result) {
  auto at = result.out.find("SHRUNK ");
  if (at == std::string::npos) return -1;
  std::istringstream line(result.out.substr(at + 7));
  long ms = -1;
  line >> ms;
  return ms;
}

void expect_ok(const ChildResult& result, int rank) {
  EXPECT_FALSE(result.timed_out) << "rank " << rank << " hung";
  EXPECT_EQ(result.exit_code, 0) << "rank " << rank << " out: " << result.out
                                 << " err: " << result.err;
  EXPECT_NE(result.out.find("RESULT ok"), std::string::npos)
      << "rank " << rank << ": " << result.out << "\nstderr: " << result.err;
}

// The victims SIGKILL themselves mid-loop; every survivor must have seen an operation fail,
// shrunk to the survivors promptly (the transport knew of the deaths: no wait for the 30 s
// timeout), and summed right with them.
void kill_and_shrink(int world, const std::vector<int>& victims,
                     std::map<std::string, std::string> env = {}) {
  std::string list;
  for (int victim : victims) list += std::to_string(victim) + ",";
  env["VICTIMS"] = list;
  Job job;
  job.start("kill_then_shrink", world, env);
  for (int rank = 0; rank < world; ++rank) {
    ChildResult result = job.ranks[rank]->wait(std::chrono::seconds(60));
    if (std::find(victims.begin(), victims.end(), rank) != victims.end()) {
      EXPECT_EQ(result.signal, SIGKILL) << "rank " << rank << ": " << result.out;
      continue;
    }
    expect_ok(result, rank);
    bool failed = result.out.find("FAILED peer_failure") != std::string::npos ||
                  result.out.find("FAILED aborted") != std::string::npos;
    EXPECT_TRUE(failed) << "rank " << rank << ": " << result.out;
    long ms = shrink_ms(result);
    EXPECT_GE(ms, 0) << result.out;
    EXPECT_LT(ms, 5000) << "rank " << rank << " took " << ms << " ms to shrink";
  }
}

TEST(Shrink, SurvivorsOfAKilledRankContinueInOrderAndSumRight) { kill_and_shrink(4, {2}); }

TEST(Shrink, SurvivorsOfAKilledRankContinueOverTcp) {
  kill_and_shrink(4, {2}, {{"WEFT_TRANSPORT", "tcp"}});
}

TEST(Shrink, TwoKilledRanksOfFiveAreBothLeftOut) { kill_and_shrink(5, {1, 3}); }

TEST(Shrink, WithNobodyDeadEveryoneIsKept) {
  Job job;
  job.start("everyone_shrinks", 4);
  for (int rank = 0; rank < 4; ++rank) {
    ChildResult result = job.ranks[rank]->wait(std::chrono::seconds(60));
    expect_ok(result, rank);
    EXPECT_NE(result.out.find("size=4"), std::string::npos) << result.out;
    EXPECT_LT(shrink_ms(result), 5000) << result.out;
  }
}

TEST(Shrink, AMemberLateBeyondTheTimeoutIsLeftOutAndTheOthersGoOn) {
  Job job;
  job.start("late_member", 4, {{"LATE", "1"}, {"SHRINK_MS", "1500"}});
  for (int rank : {0, 2, 3}) {
    ChildResult result = job.ranks[rank]->wait(std::chrono::seconds(60));
    expect_ok(result, rank);
    long ms = shrink_ms(result);
    // They waited for the late member until the timeout, then not much longer.
    EXPECT_GE(ms, 1400) << result.out;
    EXPECT_LT(ms, 4000) << result.out;
  }
  ChildResult late = job.ranks[1]->wait(std::chrono::seconds(60));
  EXPECT_EQ(late.exit_code, 0) << late.out << late.err;
  EXPECT_NE(late.out.find("RESULT aborted"), std::string::npos) << late.out;
  EXPECT_NE(late.out.find("rank 1 was left out of shrink #1"), std::string::npos) << late.out;
  EXPECT_NE(late.out.find("ranks 0, 2, 3"), std::string::npos) << late.out;
}

// Existing abort tests call abort() from the rank's own thread between operations; here the
// blocked calls are on other threads of the same rank.
void expect_abort_releases_blocked_calls(std::map<std::string, std::string> env) {
  Job job;
  job.start("abort_from_another_thread", 3, env);
  ChildResult aborter = job.ranks[0]->wait(std::chrono::seconds(60));
  EXPECT_EQ(aborter.exit_code, 0) << aborter.out << aborter.err;
  EXPECT_NE(aborter.out.find("RESULT aborted"), std::string::npos) << aborter.out;
  EXPECT_NE(aborter.out.find("stopped from another thread"), std::string::npos) << aborter.out;
  EXPECT_NE(aborter.out.find("| recv aborted"), std::string::npos) << aborter.out;
  std::istringstream line(aborter.out.substr(aborter.out.find("RESULT ") + 7));
  std::string code;
  long ms = -1;
  line >> code >> ms;
  // The abort came 300 ms after the all_reduce began; the timeout is 30 s.
  EXPECT_GE(ms, 250) << aborter.out;
  EXPECT_LT(ms, 2000) << aborter.out;
  for (int rank : {1, 2}) {
    ChildResult result = job.ranks[rank]->wait(std::chrono::seconds(60));
    EXPECT_EQ(result.exit_code, 0) << "rank " << rank << ": " << result.out << result.err;
    EXPECT_NE(result.out.find("RESULT aborted"), std::string::npos) << result.out;
  }
}

TEST(Abort, FromAnotherThreadReleasesABlockedAllReduceAndReceive) {
  expect_abort_releases_blocked_calls({});
}

TEST(Abort, FromAnotherThreadReleasesABlockedAllReduceAndReceiveOverTcp) {
  expect_abort_releases_blocked_calls({{"WEFT_TRANSPORT", "tcp"}});
}

}  // namespace
}  // namespace weft
