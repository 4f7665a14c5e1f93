// Ranks as processes: a dead, stuck or foreign peer, and a dying store, give every rank a
// clear error quickly instead of a hang.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "coll/cost_model.h"
#include "coll/selector.h"
#include "support/child_processes.h"
#include "weft/tcp_store_server.h"

namespace weft {
namespace {

using testing::ChildProcess;
using testing::ChildResult;

struct Job {
  std::unique_ptr<TcpStoreServer> store = std::make_unique<TcpStoreServer>();
  std::vector<std::unique_ptr<ChildProcess>> ranks;

  void start(const std::string& scenario, int world_size,
             std::map<std::string, std::string> extra = {},
             std::map<int, std::map<std::string, std::string>> per_rank = {}) {
    for (int rank = 0; rank < world_size; ++rank) {
      std::map<std::string, std::string> env = {
          {"RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(world_size)},
          {"WEFT_STORE_ADDR", "127.0.0.1:" + std::to_string(store->port())},
          {"MASTER_ADDR", "127.0.0.1"},
          {"WEFT_TIMEOUT", "30s"},
      };
      for (auto& [key, value] : extra) env[key] = value;
      for (auto& [key, value] : per_rank[rank]) env[key] = value;
      ranks.push_back(std::make_unique<ChildProcess>(
          std::vector<std::string>{WEFT_TEST_RANK_PATH, scenario}, env));
    }
  }
};

// "RESULT code ms message" -> elapsed ms, or -1.
long elapsed_ms(const ChildResult& result) {
  auto at = result.out.find("RESULT ");
  if (at == std::string::npos) return -1;
  std::istringstream line(result.out.substr(at + 7));
  std::string code;
  long ms = -1;
  line >> code >> ms;
  return ms;
}

void expect_fast_failure_naming(const ChildResult& result, int rank, const std::string& dead) {
  EXPECT_FALSE(result.timed_out) << "rank " << rank << " hung";
  EXPECT_EQ(result.exit_code, 0) << "rank " << rank << " out: " << result.out
                                 << " err: " << result.err;
  EXPECT_NE(result.out.find(dead), std::string::npos)
      << "rank " << rank << ": " << result.out << "\nstderr: " << result.err;
  long ms = elapsed_ms(result);
  EXPECT_GE(ms, 0) << result.out;
  EXPECT_LT(ms, 2000) << "rank " << rank << " took " << ms << " ms to notice";
}

TEST(PeerFailure, SurvivorsOfADeathDuringAReceiveFailFastNamingThePeer) {
  Job job;
  job.start("peer_dies_during_receive", 3);
  for (int rank = 0; rank < 2; ++rank) {
    expect_fast_failure_naming(job.ranks[rank]->wait(std::chrono::seconds(30)), rank, "rank 2");
  }
  EXPECT_EQ(job.ranks[2]->wait(std::chrono::seconds(5)).signal, SIGKILL);
}

TEST(PeerFailure, AReceiverDyingDuringALargeSameHostSendFailsTheSenderNamingIt) {
  for (const char* single_copy : {"auto", "off"}) {
    Job job;
    job.start("receiver_dies_during_large_send", 2, {{"WEFT_SHM_SINGLE_COPY", single_copy}});
    expect_fast_failure_naming(job.ranks[0]->wait(std::chrono::seconds(30)), 0, "rank 1");
    EXPECT_EQ(job.ranks[1]->wait(std::chrono::seconds(5)).signal, SIGKILL);
  }
}

TEST(PeerFailure, WhatADeadSenderPutInSharedMemoryIsStillDelivered) {
  Job job;
  job.start("sender_dies_after_sending", 2);
  ChildResult survivor = job.ranks[0]->wait(std::chrono::seconds(30));
  EXPECT_EQ(survivor.exit_code, 0) << survivor.out << survivor.err;
  EXPECT_NE(survivor.out.find("RESULT peer_failure"), std::string::npos) << survivor.out;
  EXPECT_NE(survivor.out.find("rank 1"), std::string::npos) << survivor.out;
  EXPECT_EQ(job.ranks[1]->wait(std::chrono::seconds(5)).signal, SIGKILL);
}

TEST(PeerFailure, ReceivesPostedBeforeADeadSendersMessagesStillGetThem) {
  Job job;
  job.start("sender_dies_after_sending", 2, {{"POSTED_FIRST", "1"}});
  ChildResult survivor = job.ranks[0]->wait(std::chrono::seconds(30));
  EXPECT_EQ(survivor.exit_code, 0) << survivor.out << survivor.err;
  EXPECT_NE(survivor.out.find("RESULT ok 4 1008"), std::string::npos) << survivor.out;
  EXPECT_EQ(job.ranks[1]->wait(std::chrono::seconds(5)).signal, SIGKILL);
}

TEST(PeerFailure, APeerThatDiedBeforeAnyConnectionIsNoticed) {
  Job job;
  job.start("peer_dies_before_connecting", 3);
  for (int rank = 0; rank < 2; ++rank) {
    expect_fast_failure_naming(job.ranks[rank]->wait(std::chrono::seconds(30)), rank, "rank 2");
  }
}

TEST(PeerFailure, EveryRankOfARingHearsOfTheDeath) {
  Job job;
  job.start("peer_dies_during_ring", 4);
  for (int rank : {0, 2, 3}) {
    expect_fast_failure_naming(job.ranks[rank]->wait(std::chrono::seconds(30)), rank, "rank 1");
  }
}

// What /dev/shm holds now: weft must never leave anything there.
std::set<std::string> dev_shm_entries() {
  std::set<std::string> names;
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ignored)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

TEST(PeerFailure, ADeathDuringASharedMemoryCollectiveIsNamedAndLeavesNothingBehind) {
  auto before = dev_shm_entries();
  {
    Job job;
    job.start("peer_dies_during_shm_collective", 3);
    for (int rank = 0; rank < 2; ++rank) {
      expect_fast_failure_naming(job.ranks[rank]->wait(std::chrono::seconds(30)), rank, "rank 2");
    }
    EXPECT_EQ(job.ranks[2]->wait(std::chrono::seconds(5)).signal, SIGKILL);
  }
  EXPECT_EQ(dev_shm_entries(), before);
}

TEST(PeerFailure, ARootThatDiesAfterEagerBroadcastsIsNamedOnceItsDataIsRead) {
  Job job;
  job.start("root_dies_after_small_broadcasts", 3);
  for (int rank = 0; rank < 2; ++rank) {
    expect_fast_failure_naming(job.ranks[rank]->wait(std::chrono::seconds(30)), rank, "rank 2");
  }
  EXPECT_EQ(job.ranks[2]->wait(std::chrono::seconds(5)).signal, SIGKILL);
}

TEST(PeerFailure, AStuckPeerInASharedMemoryCollectiveIsATimeoutNamingIt) {
  Job job;
  job.start("stuck_peer_in_shm_collective", 2, {{"WEFT_TIMEOUT", "1s"}});
  ChildResult survivor = job.ranks[0]->wait(std::chrono::seconds(30));
  job.ranks[1]->signal(SIGKILL);
  EXPECT_EQ(survivor.exit_code, 0) << survivor.out << survivor.err;
  EXPECT_NE(survivor.out.find("RESULT timeout"), std::string::npos) << survivor.out;
  EXPECT_NE(survivor.out.find("rank 1 had not reached"), std::string::npos) << survivor.out;
  long ms = elapsed_ms(survivor);
  EXPECT_GE(ms, 900);
  EXPECT_LT(ms, 3000);
}

// Rank 1 stops before a collective; ranks 0 and 2 must each get an error, soon after the
// 2 s timeout, that says rank 1 had not reached `op` (name and sequence number): not the rank
// they happened to wait for, nor a store key.
void expect_stuck_rank_named(const std::string& scenario, std::map<std::string, std::string> env,
                             const std::string& op) {
  env["WEFT_TIMEOUT"] = "2s";
  Job job;
  job.start(scenario, 3, env);
  for (int rank : {0, 2}) {
    ChildResult result = job.ranks[rank]->wait(std::chrono::seconds(30));
    EXPECT_FALSE(result.timed_out) << "rank " << rank << " hung";
    EXPECT_EQ(result.exit_code, 0) << "rank " << rank << ": " << result.out << result.err;
    bool timed_out = result.out.find("RESULT timeout") != std::string::npos ||
                     result.out.find("RESULT aborted") != std::string::npos;
    EXPECT_TRUE(timed_out) << "rank " << rank << ": " << result.out;
    EXPECT_NE(result.out.find("rank 1 had not reached"), std::string::npos)
        << "rank " << rank << ": " << result.out;
    EXPECT_NE(result.out.find(op), std::string::npos) << "rank " << rank << ": " << result.out;
    long ms = elapsed_ms(result);
    EXPECT_GE(ms, 1900) << result.out;
    EXPECT_LT(ms, 6000) << result.out;
  }
  job.ranks[1]->signal(SIGKILL);
}

TEST(StuckRank, OverTcpBothOtherRanksNameItAndTheOp) {
  expect_stuck_rank_named("stuck_rank_before_all_reduce", {{"WEFT_TRANSPORT", "tcp"}},
                          "all_reduce #2");
}

TEST(StuckRank, OverSharedMemoryBothOtherRanksNameItAndTheOp) {
  expect_stuck_rank_named("stuck_rank_before_all_reduce", {}, "all_reduce #2");
}

TEST(StuckRank, AtAGroupsFirstCollectiveTheSetupNamesIt) {
  expect_stuck_rank_named("stuck_rank_at_group_setup", {}, "all_reduce #0");
}

// The algorithms a group of `size` ranks ran `op` with, from the INFO lines naming each first
// choice ("group G (4 ranks): gather up to 4 KiB runs hierarchical").
std::set<std::string> algorithms_run(const std::string& log, int size, const std::string& op) {
  std::set<std::string> algorithms;
  const std::regex line("\\(" + std::to_string(size) + " ranks\\): " + op +
                        " up to [0-9]+ [KMG]?i?B runs ([a-z_]+)");
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it) {
    algorithms.insert((*it)[1]);
  }
  return algorithms;
}

weft::core::OpKind kind_of(const std::string& op) {
  using weft::core::OpKind;
  for (OpKind kind : {OpKind::kAllReduce, OpKind::kBroadcast, OpKind::kReduce, OpKind::kAllGather,
                      OpKind::kReduceScatter, OpKind::kAllToAll, OpKind::kGather, OpKind::kScatter,
                      OpKind::kBarrier}) {
    if (op == weft::core::name_of(kind)) return kind;
  }
  ADD_FAILURE() << "no collective named " << op;
  return OpKind::kBarrier;
}

// The selector's choice for an even call of `op` with 0 bytes on ranks of these hosts, which
// span hosts with neighbours.
std::string choice_for_nothing(const std::vector<std::string>& hosts, const std::string& op) {
  std::map<std::string, int> ranks_on;
  for (const std::string& host : hosts) ++ranks_on[host];
  int largest = 0;
  for (const auto& [host, ranks] : ranks_on) largest = std::max(largest, ranks);
  weft::coll::SelectionInput in{.collective = kind_of(op),
                                .group_size = static_cast<int>(hosts.size()),
                                .spans_hosts = true,
                                .hosts = static_cast<int>(ranks_on.size()),
                                .largest_host = largest};
  return weft::coll::name_of(weft::coll::choose_algorithm(in));
}

// What the selector may run `op` with on ranks of these hosts: with neighbours on some host,
// hierarchical or a flat algorithm, whichever the cost model predicts faster at each size
// (coll/selector.h); else flat only. A barrier (always 0 bytes) has one exact answer.
std::set<std::string> may_run(const std::vector<std::string>& hosts, const std::string& op) {
  std::map<std::string, int> ranks_on;
  for (const std::string& host : hosts) ++ranks_on[host];
  int largest = 0;
  for (const auto& [host, ranks] : ranks_on) largest = std::max(largest, ranks);
  const bool spans = ranks_on.size() > 1 && largest > 1;
  std::set<std::string> algorithms;
  for (weft::coll::Algorithm algorithm : weft::coll::modeled_algorithms(kind_of(op))) {
    algorithms.insert(weft::coll::name_of(algorithm));
  }
  if (!spans) return algorithms;
  if (op == "barrier") return {choice_for_nothing(hosts, op)};
  algorithms.insert("hierarchical");
  return algorithms;
}

bool includes(const std::set<std::string>& all, const std::set<std::string>& some) {
  return std::includes(all.begin(), all.end(), some.begin(), some.end());
}

// Ranks of this machine told they run on separate hosts (WEFT_HOST_ID): hosts A and B with
// interleaved ranks, one host with a single rank, and every rank alone. `settings` are given
// to every rank; with WEFT_ALGO=hierarchical every collective that has it runs it, whatever
// the layout, else what may_run() allows.
void run_on_hosts(const std::vector<std::string>& hosts,
                  const std::map<std::string, std::string>& settings = {}) {
  std::map<int, std::map<std::string, std::string>> per_rank;
  for (std::size_t r = 0; r < hosts.size(); ++r) per_rank[r] = {{"WEFT_HOST_ID", hosts[r]}};
  std::map<std::string, std::string> environment = settings;
  environment["WEFT_DEBUG"] = "info";
  const bool forced = settings.count("WEFT_ALGO") && settings.at("WEFT_ALGO") == "hierarchical";
  Job job;
  job.start("hierarchical_collectives", static_cast<int>(hosts.size()), environment, per_rank);
  for (std::size_t r = 0; r < hosts.size(); ++r) {
    ChildResult result = job.ranks[r]->wait(std::chrono::seconds(60));
    EXPECT_FALSE(result.timed_out) << "rank " << r << " hung";
    EXPECT_EQ(result.exit_code, 0) << "rank " << r << ": " << result.out << result.err;
    EXPECT_NE(result.out.find("RESULT ok"), std::string::npos) << result.out << result.err;
    // Ranks with a neighbour on their host worked through a host group's window (INFO log).
    bool neighbour = std::count(hosts.begin(), hosts.end(), hosts[r]) > 1;
    if (forced || may_run(hosts, "barrier") == std::set<std::string>{"hierarchical"}) {
      EXPECT_EQ(result.err.find("/host") != std::string::npos &&
                    result.err.find("shared-memory window") != std::string::npos,
                neighbour)
          << "rank " << r << ": " << result.err;
    }
    // Every collective ran what the selector allows (forced: hierarchical), on the world and
    // on the subgroup of all but rank 0.
    std::vector<std::string> others(hosts.begin() + 1, hosts.end());
    for (const char* op : {"all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter",
                           "all_to_all", "gather", "scatter", "barrier"}) {
      std::set<std::string> ran = algorithms_run(result.err, static_cast<int>(hosts.size()), op);
      EXPECT_FALSE(ran.empty()) << "rank " << r << " " << op << ": " << result.err;
      if (forced) {
        EXPECT_EQ(ran, std::set<std::string>{"hierarchical"}) << "rank " << r << " " << op;
      } else {
        EXPECT_TRUE(includes(may_run(hosts, op), ran))
            << "rank " << r << " " << op << " ran " << ::testing::PrintToString(ran);
        // all_to_all with split sizes is not priced: hierarchical wherever it may run; the
        // even call of 0 bytes runs the model's choice.
        if (std::string(op) == "all_to_all" && may_run(hosts, op).count("hierarchical")) {
          EXPECT_EQ(ran.count(choice_for_nothing(hosts, op)), 1u)
              << "rank " << r << " ran " << ::testing::PrintToString(ran);
          EXPECT_EQ(ran.count("hierarchical"), 1u)
              << "rank " << r << " ran " << ::testing::PrintToString(ran);
        }
      }
      if (r == 0 || others.size() < 2 || std::string(op) == "broadcast" ||
          std::string(op) == "all_reduce" || std::string(op) == "reduce" ||
          std::string(op) == "all_gather") {
        continue;
      }
      const std::set<std::string> sub_ran =
          algorithms_run(result.err, static_cast<int>(others.size()), op);
      if (forced) {
        EXPECT_EQ(sub_ran, std::set<std::string>{"hierarchical"})
            << "rank " << r << " " << op << " in the subgroup";
      } else {
        EXPECT_TRUE(includes(may_run(others, op), sub_ran))
            << "rank " << r << " " << op << " in the subgroup ran "
            << ::testing::PrintToString(sub_ran);
      }
    }
  }
}

// Interleaved ranks: unforced (the model's choice at each size), and forced, so that every
// hierarchical algorithm runs on a layout whose host order is not rank order.
TEST(Hierarchical, TwoHostsWithInterleavedRanks) {
  run_on_hosts({"a", "b", "a", "b", "a"});
  run_on_hosts({"a", "b", "a", "b", "a"}, {{"WEFT_ALGO", "hierarchical"}});
}

TEST(Hierarchical, ThreeHostsOfUnequalSize) {
  run_on_hosts({"a", "a", "b", "c", "c", "c"}, {{"WEFT_ALGO", "hierarchical"}});
}

TEST(Hierarchical, HostsOfThreeOneAndTwoRanks) { run_on_hosts({"a", "a", "a", "b", "c", "c"}); }

TEST(Hierarchical, AHostPerRankNeedsNoHierarchy) { run_on_hosts({"a", "b", "c"}); }

// Forced, the hierarchical algorithms also run with hosts of one member (no window) and with
// every member on one host (one leader).
TEST(Hierarchical, ForcedWithAHostPerRank) {
  run_on_hosts({"a", "b", "c", "d"}, {{"WEFT_ALGO", "hierarchical"}});
}

TEST(Hierarchical, ForcedOnOneHost) {
  run_on_hosts({"a", "a", "a"}, {{"WEFT_ALGO", "hierarchical"}});
}

// Large blocks within a host then go through the window's slots in many rounds instead of
// being read straight from their senders.
TEST(Hierarchical, WithoutSingleCopyReads) {
  run_on_hosts({"a", "a", "b", "a", "b", "b"},
               {{"WEFT_SHM_SINGLE_COPY", "off"}, {"WEFT_ALGO", "hierarchical"}});
}

// Ranks of one host talk through shared memory without being asked, and say so at INFO: one
// copy where the kernel allows process_vm_readv, a copy through shared memory when told not
// to; WEFT_TRANSPORT=tcp keeps them on TCP.
TEST(SameHost, PointToPointTakesSharedMemoryAndLogsTheChoice) {
  struct Case {
    std::map<std::string, std::string> env;
    std::string logged;
  };
  for (const Case& c : std::vector<Case>{
           {{{"WEFT_DEBUG", "info"}}, "(process_vm_readv, one copy)"},
           {{{"WEFT_DEBUG", "info"}, {"WEFT_SHM_SINGLE_COPY", "off"}}, "WEFT_SHM_SINGLE_COPY=off"},
           {{{"WEFT_DEBUG", "info"}, {"WEFT_TRANSPORT", "tcp"}}, ""}}) {
    Job job;
    job.start("same_host_exchange", 2, c.env);
    for (int rank = 0; rank < 2; ++rank) {
      ChildResult result = job.ranks[rank]->wait(std::chrono::seconds(30));
      EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
      EXPECT_NE(result.out.find("RESULT ok"), std::string::npos) << result.out;
      bool said_shm = result.err.find("through shared memory: messages up to") != std::string::npos;
      EXPECT_EQ(said_shm, !c.logged.empty()) << result.err;
      if (!c.logged.empty()) {
        EXPECT_NE(result.err.find(c.logged), std::string::npos) << result.err;
      }
    }
  }
}

TEST(PeerFailure, AStuckPeerIsATimeoutNamingIt) {
  Job job;
  job.start("stuck_peer", 2, {{"WEFT_TIMEOUT", "1s"}});
  ChildResult survivor = job.ranks[0]->wait(std::chrono::seconds(30));
  job.ranks[1]->signal(SIGKILL);
  EXPECT_EQ(survivor.exit_code, 0) << survivor.out << survivor.err;
  EXPECT_NE(survivor.out.find("RESULT timeout"), std::string::npos) << survivor.out;
  EXPECT_NE(survivor.out.find("rank 1"), std::string::npos) << survivor.out;
  long ms = elapsed_ms(survivor);
  EXPECT_GE(ms, 900);
  EXPECT_LT(ms, 3000);
}

TEST(Handshake, ARankWithTheWrongJobTokenIsRefusedByTheStore) {
  // The transports' own refusal of a wrong token is tests/unit/tcp_handshake_test.cc's: here
  // a rank of another job does not get past the store.
  Job job;
  TcpStoreServer::Options options;
  options.job_token = "token-of-job-a";
  job.store = std::make_unique<TcpStoreServer>(options);
  job.start(
      "wrong_token", 2, {{"WEFT_TIMEOUT", "3s"}},
      {{0, {{"WEFT_JOB_TOKEN", "token-of-job-a"}}}, {1, {{"WEFT_JOB_TOKEN", "token-of-job-b"}}}});
  ChildResult stranger = job.ranks[1]->wait(std::chrono::seconds(30));
  EXPECT_EQ(stranger.exit_code, 0) << stranger.out << stranger.err;
  EXPECT_NE(stranger.out.find("RESULT unauthorized"), std::string::npos) << stranger.out;
  EXPECT_NE(stranger.out.find("job token mismatch"), std::string::npos) << stranger.out;
  EXPECT_LT(elapsed_ms(stranger), 2000) << stranger.out;
  ChildResult rank0 = job.ranks[0]->wait(std::chrono::seconds(30));
  EXPECT_EQ(rank0.exit_code, 0) << rank0.out << rank0.err;
  EXPECT_NE(rank0.out.find("RESULT timeout"), std::string::npos) << rank0.out;
  EXPECT_NE(rank0.out.find("missing: 1"), std::string::npos) << rank0.out;
}

TEST(StoreFailure, ABlockedStoreCallFailsWhenTheServerGoesAway) {
  Job job;
  job.start("store_dies", 1);
  // Wait until the client is parked in its get, then stop the server.
  for (int i = 0; i < 500 && job.store->num_clients() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  job.store.reset();
  ChildResult result = job.ranks[0]->wait(std::chrono::seconds(30));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("store server"), std::string::npos) << result.out;
  EXPECT_LT(elapsed_ms(result), 2000);
}

// Every rank gets an error quickly that says what each side called.
void expect_mismatch_everywhere(Job& job, int world, const std::vector<std::string>& mentions) {
  for (int rank = 0; rank < world; ++rank) {
    ChildResult result = job.ranks[rank]->wait(std::chrono::seconds(30));
    EXPECT_EQ(result.exit_code, 0) << "rank " << rank << ": " << result.out << result.err;
    bool clear = result.out.find("RESULT mismatch") != std::string::npos ||
                 result.out.find("RESULT aborted") != std::string::npos;
    EXPECT_TRUE(clear) << "rank " << rank << ": " << result.out;
    for (const std::string& text : mentions) {
      EXPECT_NE(result.out.find(text), std::string::npos) << "rank " << rank << ": " << result.out;
    }
    EXPECT_LT(elapsed_ms(result), 5000) << result.out;
  }
}

TEST(Mismatch, DifferentCollectivesAtTheSamePointFailEveryRank) {
  Job job;
  job.start("mismatched_ops", 3);
  expect_mismatch_everywhere(job, 3, {"all_reduce(count=8", "reduce(count=8"});
}

TEST(Mismatch, DifferentCountsFailEveryRank) {
  Job job;
  job.start("mismatched_counts", 3);
  expect_mismatch_everywhere(job, 3, {"count=4", "count=8"});
}

// Across hosts the leaders carry the split sizes with the blocks: a disagreement between two
// ranks on different hosts is found even when the hosts' totals agree. The ranks that saw
// nothing wrong learn it in the barrier that follows, hierarchical too: a member (rank 2) that
// shares no socket with the rank that found it learns why from its leader through the host's
// window, not only that the leader left.
TEST(Mismatch, AllToAllSplitsThatDisagreeAcrossHostsFailEveryRank) {
  std::map<int, std::map<std::string, std::string>> per_rank;
  const std::vector<std::string> hosts{"a", "b", "a", "b"};
  for (std::size_t r = 0; r < hosts.size(); ++r) per_rank[r] = {{"WEFT_HOST_ID", hosts[r]}};
  Job job;
  job.start("mismatched_splits_across_hosts", 4, {}, per_rank);
  expect_mismatch_everywhere(
      job, 4, {"all_to_all split sizes disagree: rank 0 sends 4 bytes to rank 1, which expects 8"});
}

}  // namespace
}  // namespace weft
