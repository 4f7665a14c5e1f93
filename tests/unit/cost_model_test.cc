// The cost model (coll/cost_model.h) against hand-computed times, its shape (monotone in the
// size, latency-optimal choices for tiny messages and bandwidth-optimal ones for huge), the
// choice-change finder against a byte-by-byte scan, and weft-model's output against the model.
#include "coll/cost_model.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "coll/selector.h"
#include "weft/error.h"

namespace weft::coll {
namespace {

using core::OpKind;
using enum Algorithm;

// alpha 10 us, beta 1 ns/B (1 GB/s), gamma 0.1 ns/B (10 GB/s): round numbers for hand sums.
constexpr NetworkModel kNet{1e-5, 1e-9, 1e-10};
constexpr double kA = 1e-5;
constexpr double kB = 1e-9;
constexpr double kG = 1e-10;
constexpr std::size_t kMiB = std::size_t{1} << 20;

double seconds(OpKind collective, Algorithm algorithm, int p, std::size_t n) {
  return predicted_seconds(collective, algorithm, p, n, kNet);
}

TEST(CostModel, AllReduceMatchesHandComputedTimes) {
  // Ring, 4 ranks, 4 MiB: blocks of 1 MiB, one segment each: 2(p-1)(a + bn/p) + (p-1) g n/p.
  EXPECT_DOUBLE_EQ(seconds(OpKind::kAllReduce, kRing, 4, 4 * kMiB),
                   6 * (kA + 1048576 * kB) + 3 * 1048576 * kG);
  // Ring, 4 ranks, 16 MiB: blocks of 4 MiB in 4 segments; 24 messages; all but the last segment
  // of each reduce-scatter step overlap transfer and reduction (beta > gamma: beta per byte).
  EXPECT_DOUBLE_EQ(seconds(OpKind::kAllReduce, kRing, 4, 16 * kMiB),
                   24 * kA + 3 * 4194304 * kB + 3 * (3145728 * kB + 1048576 * (kB + kG)));
  // Recursive doubling, 8 ranks: 3 rounds of the whole buffer.
  EXPECT_DOUBLE_EQ(seconds(OpKind::kAllReduce, kRecursiveDoubling, 8, 1000),
                   3 * (kA + 1000 * kB) + 3 * 1000 * kG);
  // 6 ranks fold onto 4: 2 rounds, a fold and an unfold; 3 reductions (the fold's and 2 rounds').
  EXPECT_DOUBLE_EQ(seconds(OpKind::kAllReduce, kRecursiveDoubling, 6, 1000),
                   4 * (kA + 1000 * kB) + 3 * 1000 * kG);
  // Rabenseifner, 8 ranks: 6 messages, 2 * 7/8 n bytes, 7/8 n reduced.
  EXPECT_DOUBLE_EQ(seconds(OpKind::kAllReduce, kRabenseifner, 8, 8000),
                   6 * kA + 2 * 7000 * kB + 7000 * kG);
  // 6 ranks: on 4 (4 messages, 2 * 3/4 n, 3/4 n reduced) plus fold and unfold of 8000 bytes.
  EXPECT_DOUBLE_EQ(seconds(OpKind::kAllReduce, kRabenseifner, 6, 8000),
                   4 * kA + 2 * 6000 * kB + 6000 * kG + 2 * (kA + 8000 * kB) + 8000 * kG);
  // Naive, 3 ranks: rank 0 receives 2 buffers, reduces 2, sends 2.
  EXPECT_DOUBLE_EQ(seconds(OpKind::kAllReduce, kNaive, 3, 100), 4 * (kA + 100 * kB) + 2 * 100 * kG);
}

TEST(CostModel, OtherCollectivesMatchHandComputedTimes) {
  // Binomial broadcast, 5 ranks (3 children at the root), 3 MiB + 1 byte: 4 segments each.
  EXPECT_DOUBLE_EQ(seconds(OpKind::kBroadcast, kBinomial, 5, 3 * kMiB + 1),
                   3 * (4 * kA + 3145729 * kB));
  EXPECT_DOUBLE_EQ(seconds(OpKind::kBroadcast, kScatterAllgather, 5, 1000000),
                   7 * kA + 2 * 800000 * kB);
  // Bruck: 3 rounds for 5 ranks, 4/5 of 5000 bytes in, a rotation of 5000 bytes.
  EXPECT_DOUBLE_EQ(seconds(OpKind::kAllGather, kBruck, 5, 5000), 3 * kA + 4000 * kB + 5000 * kG);
  EXPECT_DOUBLE_EQ(seconds(OpKind::kAllGather, kRing, 5, 5000), 4 * (kA + 1000 * kB));
  EXPECT_DOUBLE_EQ(seconds(OpKind::kReduceScatter, kRing, 4, 400), 3 * (kA + 100 * (kB + kG)));
  // Binomial reduce, 8 ranks, 2 MiB: 3 children, 2 segments from each.
  EXPECT_DOUBLE_EQ(seconds(OpKind::kReduce, kBinomial, 8, 2 * kMiB),
                   3 * (2 * kA + 1048576 * kB + 1048576 * (kB + kG)));
  EXPECT_DOUBLE_EQ(seconds(OpKind::kGather, kBinomial, 7, 700), 3 * kA + 600 * kB);
  EXPECT_DOUBLE_EQ(seconds(OpKind::kScatter, kBinomial, 7, 700), 3 * kA + 600 * kB);
  // Pairwise: up to 1 MiB the p - 1 exchanges overlap (one latency), above it they do not.
  EXPECT_DOUBLE_EQ(seconds(OpKind::kAllToAll, kPairwise, 4, kMiB), kA + 786432 * kB);
  EXPECT_DOUBLE_EQ(seconds(OpKind::kAllToAll, kPairwise, 4, 4 * kMiB), 3 * kA + 3145728 * kB);
  EXPECT_DOUBLE_EQ(seconds(OpKind::kBarrier, kDissemination, 4096, 0), 12 * kA);
  EXPECT_DOUBLE_EQ(seconds(OpKind::kBarrier, kDissemination, 4097, 0), 13 * kA);
}

TEST(CostModel, OneRankCostsNothingAndUnknownPairsAreRefused) {
  EXPECT_EQ(seconds(OpKind::kAllReduce, kRing, 1, kMiB), 0.0);
  EXPECT_THROW(seconds(OpKind::kAllReduce, kBruck, 4, 8), Error);
  EXPECT_THROW(seconds(OpKind::kAllReduce, kRing, 0, 8), Error);
  EXPECT_TRUE(modeled_algorithms(OpKind::kScan).empty());
}

std::vector<std::pair<OpKind, Algorithm>> every_modeled_pair() {
  std::vector<std::pair<OpKind, Algorithm>> pairs;
  for (OpKind c : {OpKind::kAllReduce, OpKind::kBroadcast, OpKind::kReduce, OpKind::kAllGather,
                   OpKind::kGather, OpKind::kScatter, OpKind::kReduceScatter, OpKind::kAllToAll,
                   OpKind::kBarrier}) {
    for (Algorithm a : modeled_algorithms(c)) pairs.emplace_back(c, a);
  }
  return pairs;
}

TEST(CostModel, MoreBytesNeverTakeLess) {
  for (auto [c, a] : every_modeled_pair()) {
    for (int p : {2, 3, 8, 100, 4096}) {
      double previous = 0;
      for (std::size_t n = 0; n <= 256 * kMiB; n = n * 5 / 4 + 7) {
        const double now = seconds(c, a, p, n);
        EXPECT_GE(now, previous) << core::name_of(c) << " " << name_of(a) << " p=" << p
                                 << " n=" << n;
        previous = now;
      }
    }
  }
}

// Across powers of two; between them the folded algorithms may be cheaper at 2^k than 2^k - 1.
TEST(CostModel, MoreRanksNeverTakeLessAcrossPowersOfTwo) {
  for (auto [c, a] : every_modeled_pair()) {
    for (std::size_t n : {std::size_t{8}, 64 * std::size_t{1024}, 64 * kMiB}) {
      double previous = 0;
      for (int p = 2; p <= 4096; p *= 2) {
        const double now = seconds(c, a, p, n);
        EXPECT_GE(now, previous) << core::name_of(c) << " " << name_of(a) << " p=" << p;
        previous = now;
      }
    }
  }
}

TEST(CostModel, NonPowersOfTwoPayForTheFold) {
  const auto rd = [](int p) { return seconds(OpKind::kAllReduce, kRecursiveDoubling, p, 4096); };
  EXPECT_GT(rd(5), rd(4));
  EXPECT_EQ(rd(5), rd(7));  // same power of two below, same fold
  EXPECT_GT(rd(7), rd(8));  // 8 needs no fold: 3 rounds against 2 + 2
  const auto bruck = [](int p) { return seconds(OpKind::kAllGather, kBruck, p, 0); };
  EXPECT_EQ(bruck(5), 3 * kA);  // Bruck needs no fold: ceil(log2 p) rounds
}

TEST(CostModel, TinyMessagesChooseLatencyOptimalAlgorithms) {
  for (int p : {8, 1000, 4096}) {
    EXPECT_EQ(best_algorithm(OpKind::kAllReduce, p, 8, kNet), kRecursiveDoubling) << p;
    EXPECT_EQ(best_algorithm(OpKind::kBroadcast, p, 8, kNet), kBinomial) << p;
    EXPECT_EQ(best_algorithm(OpKind::kAllGather, p, 8 * std::size_t(p), kNet), kBruck) << p;
  }
}

TEST(CostModel, HugeMessagesChooseBandwidthOptimalAlgorithms) {
  const std::size_t huge = std::size_t{64} << 30;
  // Rabenseifner sends what the ring sends, but reduces each half after it arrived; the ring's
  // segments overlap the reduction with the transfer of the next one.
  EXPECT_EQ(best_algorithm(OpKind::kAllReduce, 1024, huge, kNet), kRing);
  EXPECT_EQ(best_algorithm(OpKind::kAllReduce, 1000, huge, kNet), kRing);
  // Without segments (1 MiB on 4 ranks: blocks of one segment) the ring only adds messages.
  const Algorithm bandwidth_optimal[] = {kRabenseifner, kRing};
  EXPECT_EQ(fastest_of(OpKind::kAllReduce, bandwidth_optimal, 4, 4 * kMiB, kNet), kRabenseifner);
  EXPECT_EQ(best_algorithm(OpKind::kBroadcast, 1000, huge, kNet), kScatterAllgather);
  EXPECT_EQ(best_algorithm(OpKind::kAllGather, 1000, huge, kNet), kRing);
}

TEST(CostModel, ReduceScatterHalvesForSmallMessagesAndRingsForLargeOnes) {
  const NetworkModel& net = selector_network_model();
  for (int p : {4, 8, 6}) {
    EXPECT_EQ(choose_over_network(OpKind::kReduceScatter, p, 1024, true, net), kRecursiveHalving)
        << p;
    // Halving receives each half whole before reducing it; the ring's segments overlap the two.
    EXPECT_EQ(choose_over_network(OpKind::kReduceScatter, p, 256 * kMiB, true, net), kRing) << p;
  }
  // Two ranks: one exchange either way, and halving is the first candidate.
  EXPECT_EQ(seconds(OpKind::kReduceScatter, kRecursiveHalving, 2, 1024),
            seconds(OpKind::kReduceScatter, kRing, 2, 1024));
}

TEST(CostModel, FastestOfBreaksTiesTowardTheFirstCandidate) {
  // 2 ranks, one segment: Rabenseifner and the ring send and reduce the same.
  const Algorithm both[] = {kRabenseifner, kRing};
  const Algorithm reversed[] = {kRing, kRabenseifner};
  EXPECT_EQ(seconds(OpKind::kAllReduce, kRabenseifner, 2, kMiB),
            seconds(OpKind::kAllReduce, kRing, 2, kMiB));
  EXPECT_EQ(fastest_of(OpKind::kAllReduce, both, 2, kMiB, kNet), kRabenseifner);
  EXPECT_EQ(fastest_of(OpKind::kAllReduce, reversed, 2, kMiB, kNet), kRing);
}

TEST(CostModel, ChoiceChangesMatchAByteByByteScan) {
  constexpr std::size_t kHigh = std::size_t{3} << 20;
  for (auto [collective, p] : {std::pair{OpKind::kAllReduce, 4}, std::pair{OpKind::kAllReduce, 8},
                               std::pair{OpKind::kAllReduce, 7}, std::pair{OpKind::kBroadcast, 6},
                               std::pair{OpKind::kAllGather, 8}}) {
    const auto choose = [&](std::size_t n) {
      return choose_over_network(collective, p, n, true, kNet);
    };
    std::vector<ChoiceChange> scanned;
    Algorithm previous = choose(1);
    for (std::size_t n = 2; n <= kHigh; ++n) {
      const Algorithm now = choose(n);
      if (now != previous) scanned.push_back({n, previous, now});
      previous = now;
    }
    EXPECT_FALSE(scanned.empty()) << core::name_of(collective) << " p=" << p;
    EXPECT_EQ(find_choice_changes(choose, 1, kHigh), scanned)
        << core::name_of(collective) << " p=" << p;
  }
}

// The selector's network keeps the choices measured over TCP on 4 ranks
// (docs/perf-history.md, section 2) at the sizes the benchmarks use.
TEST(CostModel, TheSelectorsNetworkKeepsTheFourRankChoices) {
  const NetworkModel& net = selector_network_model();
  const auto all_reduce = [&](std::size_t n) {
    return choose_over_network(OpKind::kAllReduce, 4, n, true, net);
  };
  EXPECT_EQ(all_reduce(64 << 10), kRecursiveDoubling);
  EXPECT_EQ(all_reduce(kMiB), kRabenseifner);
  EXPECT_EQ(all_reduce(16 * kMiB), kRing);
  for (std::size_t n : {std::size_t{64} << 10, kMiB, 16 * kMiB}) {
    EXPECT_EQ(choose_over_network(OpKind::kBroadcast, 4, n, true, net), kBinomial) << n;
  }
  EXPECT_EQ(choose_over_network(OpKind::kAllGather, 4, 256 << 10, true, net), kBruck);
  EXPECT_EQ(choose_over_network(OpKind::kAllGather, 4, 4 * kMiB, true, net), kRing);
  EXPECT_EQ(choose_over_network(OpKind::kAllGather, 4, 256 << 10, false, net), kRing);
}

// Off powers of two the selector may choose Rabenseifner (fold, halving and doubling on q ranks,
// unfold) when the model says so: 64 KiB on 12 ranks, by a plain computation of the three
// candidates on the selector's network (one segment per message).
TEST(CostModel, OffPowersOfTwoTheSelectorTakesRabenseifnerWhereTheModelSaysSo) {
  const NetworkModel& net = selector_network_model();
  const double a = net.alpha_s, b = net.beta_s_per_byte, g = net.gamma_s_per_byte;
  const double n = 64 << 10;
  const double p = 12, q = 8, lg_q = 3;
  const double rd = (lg_q + 2) * (a + n * b) + (lg_q + 1) * n * g;
  const double rab =
      2 * lg_q * a + 2 * (q - 1) / q * n * b + (q - 1) / q * n * g + 2 * (a + n * b) + n * g;
  const double ring = 2 * (p - 1) * a + (p - 1) * (n / p) * b + (p - 1) * (n / p) * (b + g);
  EXPECT_DOUBLE_EQ(predicted_seconds(OpKind::kAllReduce, kRabenseifner, 12, 64 << 10, net), rab);
  EXPECT_DOUBLE_EQ(predicted_seconds(OpKind::kAllReduce, kRecursiveDoubling, 12, 64 << 10, net),
                   rd);
  EXPECT_DOUBLE_EQ(predicted_seconds(OpKind::kAllReduce, kRing, 12, 64 << 10, net), ring);
  ASSERT_LT(rab, rd);
  ASSERT_LT(rab, ring);
  EXPECT_EQ(choose_over_network(OpKind::kAllReduce, 12, 64 << 10, true, net), kRabenseifner);
  // And where the fold costs more than halving saves, it does not: 1 MiB on 3 to 7 ranks.
  for (int ranks : {3, 5, 6, 7}) {
    EXPECT_EQ(choose_over_network(OpKind::kAllReduce, ranks, kMiB, true, net), kRing) << ranks;
  }
  // 1000 ranks, 1 MiB: the case docs/scaling.md gave as what the selector could not do.
  EXPECT_EQ(choose_over_network(OpKind::kAllReduce, 1000, kMiB, true, net), kRabenseifner);
}

// weft-model --csv against the model, when ctest names the binary (tests/unit/CMakeLists.txt).
// Across hosts: the network above, and shared memory at 1 us a phase and 0.1 ns/B.
constexpr NetworkModel kHosts{.alpha_s = kA,
                              .beta_s_per_byte = kB,
                              .gamma_s_per_byte = kG,
                              .shm_alpha_s = 1e-6,
                              .shm_beta_s_per_byte = 1e-10};
constexpr double kSA = 1e-6;
constexpr double kSB = 1e-10;

double hierarchical(OpKind collective, Algorithm leaders, HostSpread spread, std::size_t n) {
  return predicted_hierarchical_seconds(collective, leaders, spread, n, kHosts);
}

TEST(CostModel, FlatAlgorithmsOnSharedHostsPayTheirHostsBytesOnOneLink) {
  // 2 hosts of 8 ranks, recursive doubling of 1000 bytes: 4 rounds, each round's bytes times 8.
  const HostSpread two_by_eight{16, 2, 8};
  EXPECT_DOUBLE_EQ(predicted_seconds_on_hosts(OpKind::kAllReduce, kRecursiveDoubling, two_by_eight,
                                              1000, kHosts),
                   4 * (kA + 8 * 1000 * kB) + 4 * 1000 * kG);
  // Pairwise on 2 hosts of 4, 8000 bytes per rank: one latency, 7/8 of the bytes times 4.
  EXPECT_DOUBLE_EQ(
      predicted_seconds_on_hosts(OpKind::kAllToAll, kPairwise, {8, 2, 4}, 8000, kHosts),
      kA + 7000 * 4 * kB);
  // A host of one rank per link: the model of its own.
  EXPECT_DOUBLE_EQ(
      predicted_seconds_on_hosts(OpKind::kBarrier, kDissemination, {5, 5, 1}, 0, kHosts),
      seconds(OpKind::kBarrier, kDissemination, 5, 0));
}

TEST(CostModel, HierarchicalMatchesHandComputedPhases) {
  // all_reduce, 2 hosts of 8, 1000 bytes: reduce to the leader (a phase and a reduction),
  // recursive doubling on 2 leaders, broadcast.
  EXPECT_DOUBLE_EQ(hierarchical(OpKind::kAllReduce, kRecursiveDoubling, {16, 2, 8}, 1000),
                   2 * (kSA + 1000 * kSB) + 1000 * kG + (kA + 1000 * kB) + 1000 * kG);
  // broadcast, 3 hosts of 2: two phases and a binomial tree of 2 levels among 3 leaders.
  EXPECT_DOUBLE_EQ(hierarchical(OpKind::kBroadcast, kBinomial, {6, 3, 2}, 1000),
                   2 * (kSA + 1000 * kSB) + 2 * (kA + 1000 * kB));
  // all_to_all, 2 hosts of 4, 8000 bytes per rank: pack (8000), gather 32000 to the leader,
  // regroup twice (64000), pairwise of 32000 between 2 leaders, scatter 32000.
  EXPECT_DOUBLE_EQ(
      hierarchical(OpKind::kAllToAll, kPairwise, {8, 2, 4}, 8000),
      8000 * kG + (kSA + 32000 * kSB) + 64000 * kG + (kA + 16000 * kB) + (kSA + 32000 * kSB));
  // all_gather, 2 hosts of 2, 4000 bytes in all: the host's 2000, a ring of 2 leaders, the
  // broadcast of 4000, the reordering pass over 4000.
  EXPECT_DOUBLE_EQ(hierarchical(OpKind::kAllGather, kRing, {4, 2, 2}, 4000),
                   (kSA + 2000 * kSB) + (kA + 2000 * kB) + (kSA + 4000 * kSB) + 4000 * kG);
  // gather, hosts of 3, 1 and 2 ranks, 6000 bytes: the largest host's 3000 to its leader, a
  // binomial gather on 3 leaders (2 levels, 2/3 of the bytes), rank order, the hand-off.
  EXPECT_DOUBLE_EQ(hierarchical(OpKind::kGather, kBinomial, {6, 3, 3}, 6000),
                   (kSA + 3000 * kSB) + (2 * kA + 4000 * kB) + 6000 * kG + (kSA + 6000 * kSB));
  // barrier, 2 hosts: two phases and one dissemination round.
  EXPECT_DOUBLE_EQ(hierarchical(OpKind::kBarrier, kDissemination, {5, 2, 3}, 0), 2 * kSA + kA);
  // Hosts of one rank wait for nobody within them.
  EXPECT_DOUBLE_EQ(hierarchical(OpKind::kBarrier, kDissemination, {4, 4, 1}, 0), 2 * kA);
  EXPECT_THROW(hierarchical(OpKind::kScan, kRecursiveDoubling, {4, 2, 2}, 8), Error);
  EXPECT_THROW(hierarchical(OpKind::kBarrier, kDissemination, {4, 1, 4}, 0), Error);
}

// Whatever the layout, the hierarchical algorithm's cross-host part is the leaders' algorithm
// on h ranks with their own links, so it never costs more than that plus its phases; and a
// flat algorithm on hosts of one rank is the flat model itself.
TEST(CostModel, SharingALinkNeverMakesAFlatAlgorithmFaster) {
  for (auto [c, a] : every_modeled_pair()) {
    for (int k : {1, 2, 8}) {
      for (std::size_t n : {std::size_t{0}, std::size_t{8}, std::size_t{64} << 10, 64 * kMiB}) {
        const HostSpread spread{16, 16 / k, k};
        EXPECT_GE(predicted_seconds_on_hosts(c, a, spread, n, kHosts),
                  predicted_seconds(c, a, 16, n, kHosts))
            << core::name_of(c) << " " << name_of(a) << " k=" << k << " n=" << n;
      }
    }
  }
}

TEST(CostModelCli, WeftModelPrintsTheModelsTimesAndChoices) {
  const char* binary = std::getenv("WEFT_MODEL_BINARY");
  if (binary == nullptr || *binary == '\0') GTEST_SKIP() << "WEFT_MODEL_BINARY is not set";
  const std::string command = std::string(binary) +
                              " --alpha 10us --beta 1GB/s --gamma 1e-10 --csv"
                              " --collective all_reduce,broadcast --ranks 6,8,4096"
                              " --sizes 8,64K,16M";
  std::FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char chunk[4096];
  while (std::size_t got = std::fread(chunk, 1, sizeof chunk, pipe)) output.append(chunk, got);
  ASSERT_EQ(pclose(pipe), 0) << output;

  std::istringstream lines(output);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "kind,collective,ranks,bytes,algorithm,seconds,selected,from");
  int times = 0;
  std::map<std::tuple<std::string, int>, std::vector<std::string>> changes_seen;
  while (std::getline(lines, line)) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string field; std::getline(fields, field, ',');) f.push_back(field);
    f.resize(8);
    const OpKind c = f[1] == "all_reduce" ? OpKind::kAllReduce : OpKind::kBroadcast;
    const int p = std::stoi(f[2]);
    const std::size_t n = std::stoull(f[3]);
    if (f[0] == "change") {
      changes_seen[{f[1], p}].push_back(f[3] + ":" + f[7] + ">" + f[4]);
      continue;
    }
    ASSERT_EQ(f[0], "time") << line;
    Algorithm algorithm{};
    for (Algorithm a : modeled_algorithms(c)) {
      if (f[4] == name_of(a)) algorithm = a;
    }
    EXPECT_STREQ(name_of(algorithm), f[4].c_str()) << line;
    EXPECT_NEAR(std::stod(f[5]), seconds(c, algorithm, p, n), 1e-8 * seconds(c, algorithm, p, n))
        << line;
    EXPECT_EQ(f[6] == "1", choose_over_network(c, p, n, true, kNet) == algorithm) << line;
    ++times;
  }
  EXPECT_EQ(times, 3 * 3 * (4 + 2));  // ranks x sizes x algorithms of the two collectives
  for (const auto& [key, seen] : changes_seen) {
    const OpKind c = std::get<0>(key) == "all_reduce" ? OpKind::kAllReduce : OpKind::kBroadcast;
    const int p = std::get<1>(key);
    std::vector<std::string> expected;
    for (const ChoiceChange& change : find_choice_changes(
             [&](std::size_t n) { return choose_over_network(c, p, n, true, kNet); }, 1,
             16 * kMiB)) {
      expected.push_back(std::to_string(change.bytes) + ":" + name_of(change.from) + ">" +
                         name_of(change.to));
    }
    EXPECT_EQ(seen, expected) << std::get<0>(key) << " p=" << p;
  }
  EXPECT_FALSE(changes_seen.empty());
}

// --per-host: the selector's choice across hosts marked on the right column, as
// choose_across_hosts makes it; a size that does not split into hosts is refused.
TEST(CostModelCli, WeftModelPricesHostsOfSeveralRanks) {
  const char* binary = std::getenv("WEFT_MODEL_BINARY");
  if (binary == nullptr || *binary == '\0') GTEST_SKIP() << "WEFT_MODEL_BINARY is not set";
  auto run = [&](const std::string& flags, std::string& output) {
    std::FILE* pipe = popen((std::string(binary) + " " + flags + " 2>&1").c_str(), "r");
    if (pipe == nullptr) return -1;
    char chunk[4096];
    while (std::size_t got = std::fread(chunk, 1, sizeof chunk, pipe)) output.append(chunk, got);
    return pclose(pipe);
  };
  const std::string network =
      "--alpha 10us --beta 1GB/s --gamma 1e-10 --shm-alpha 1us --shm-beta 1e-10";
  std::string output;
  ASSERT_EQ(run(network + " --per-host 8 --ranks 16,64 --sizes 8,16M --collective "
                          "all_reduce,all_to_all,barrier",
                output),
            0)
      << output;
  std::map<std::string, int> rows;  // "collective ranks bytes" -> 1 hierarchical, 0 flat
  std::string collective;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(", hosts of 8 ranks") != std::string::npos) {
      collective = line.substr(0, line.find(','));
      continue;
    }
    std::istringstream fields(line);
    int ranks = 0, hosts = 0;
    std::string bytes;
    if (!(fields >> ranks >> hosts >> bytes) || hosts == 0) continue;
    // The marks: after the hierarchical time (column 41), or at the end after the flat one.
    ASSERT_GT(line.size(), 41u) << line;
    const bool hierarchical = line[40] == '*';
    EXPECT_NE(hierarchical, line.back() == '*') << line;
    rows[collective + " " + std::to_string(ranks) + " " + bytes] = hierarchical ? 1 : 0;
  }
  ASSERT_EQ(rows.size(), 3u * 2 * 2) << output;
  for (const auto& [key, hierarchical] : rows) {
    std::istringstream fields(key);
    std::string name, bytes;
    int ranks = 0;
    fields >> name >> ranks >> bytes;
    const OpKind c = name == "all_reduce"   ? OpKind::kAllReduce
                     : name == "all_to_all" ? OpKind::kAllToAll
                                            : OpKind::kBarrier;
    const std::size_t n = bytes == "8" ? 8 : 16 * kMiB;
    EXPECT_EQ(hierarchical == 1,
              choose_across_hosts(c, {ranks, ranks / 8, 8}, n, true, kHosts) == kHierarchical)
        << key << "\n"
        << output;
  }
  output.clear();
  EXPECT_NE(run(network + " --per-host 8 --ranks 12", output), 0);
  EXPECT_NE(output.find("--per-host 8: 12 ranks do not make 2 or more hosts of that many"),
            std::string::npos)
      << output;
}

}  // namespace
}  // namespace weft::coll
