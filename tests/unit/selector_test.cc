// The selector's choices: shared memory for a group on one host (whatever the size, so that
// ranks of an uneven call agree), hierarchical or flat for a group over hosts with neighbours
// by the cost model's predictions for its layout, by size otherwise; what a forced name and
// WEFT_ALGO do; the fallback when no window can be mapped.
#include "coll/selector.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "coll/cost_model.h"
#include "support/errors.h"
#include "weft/error.h"

namespace weft::coll {
namespace {

using core::OpKind;
using testing::error_of;

SelectionInput input(OpKind collective, std::size_t bytes, int size) {
  SelectionInput in;
  in.collective = collective;
  in.bytes = bytes;
  in.group_size = size;
  return in;
}

TEST(Selector, OneHostUsesSharedMemoryAtEverySize) {
  for (OpKind c : {OpKind::kAllReduce, OpKind::kBroadcast, OpKind::kReduce, OpKind::kAllGather,
                   OpKind::kReduceScatter, OpKind::kAllToAll, OpKind::kBarrier}) {
    for (std::size_t bytes : {std::size_t{0}, std::size_t{8}, std::size_t{64} << 20}) {
      SelectionInput in = input(c, bytes, 4);
      in.single_host = true;
      in.equal_blocks = bytes != 8;
      EXPECT_EQ(choose_algorithm(in), Algorithm::kShm) << name_of(c) << " " << bytes;
    }
  }
  // Collectives without a shared-memory algorithm keep theirs.
  for (OpKind c : {OpKind::kGather, OpKind::kScatter, OpKind::kScan}) {
    SelectionInput in = input(c, 64, 4);
    in.single_host = true;
    EXPECT_EQ(choose_algorithm(in), algorithms_of(c).front()) << name_of(c);
  }
}

// The API asks runs_shm_unforced() instead of choose_algorithm() when nothing is forced: on one
// host, exactly the collectives that have a shared-memory algorithm run it, at every size.
TEST(Selector, TheUnforcedShortcutNamesTheCollectivesWithSharedMemory) {
  const std::string no_setting;
  for (OpKind c : {OpKind::kBroadcast, OpKind::kAllReduce, OpKind::kReduce, OpKind::kAllGather,
                   OpKind::kGather, OpKind::kScatter, OpKind::kReduceScatter, OpKind::kAllToAll,
                   OpKind::kBarrier, OpKind::kScan}) {
    const std::vector<Algorithm>& known = algorithms_of(c);
    const bool has_shm = std::find(known.begin(), known.end(), Algorithm::kShm) != known.end();
    EXPECT_EQ(runs_shm_unforced(c, true), has_shm) << name_of(c);
    EXPECT_FALSE(runs_shm_unforced(c, false)) << name_of(c);
    for (std::size_t bytes : {std::size_t{0}, std::size_t{8}, std::size_t{64} << 20}) {
      SelectionInput in = input(c, bytes, 3);
      in.single_host = true;
      in.algorithm_setting = &no_setting;
      EXPECT_EQ(choose_algorithm(in) == Algorithm::kShm, has_shm) << name_of(c) << " " << bytes;
    }
  }
}

SelectionInput on_hosts(OpKind collective, std::size_t bytes, int size, int hosts, int largest) {
  SelectionInput in = input(collective, bytes, size);
  in.spans_hosts = true;
  in.hosts = hosts;
  in.largest_host = largest;
  return in;
}

constexpr OpKind kWithHierarchical[] = {
    OpKind::kAllReduce, OpKind::kBroadcast,     OpKind::kReduce,
    OpKind::kAllGather, OpKind::kReduceScatter, OpKind::kAllToAll,
    OpKind::kGather,    OpKind::kScatter,       OpKind::kBarrier};

// 2 hosts of 8 ranks, small messages: the leaders' one message beats the flat algorithms'
// log2(16) (or 15) messages, whatever the phases within hosts cost; without neighbours on any
// host (or over TCP only), the flat algorithm.
TEST(Selector, TwoHostsOfEightGoHierarchicalForSmallMessages) {
  for (OpKind c : kWithHierarchical) {
    if (c == OpKind::kAllToAll) continue;  // below
    for (std::size_t bytes : {std::size_t{0}, std::size_t{8}, std::size_t{4} << 10}) {
      SelectionInput in = on_hosts(c, bytes, 16, 2, 8);
      EXPECT_EQ(choose_algorithm(in), Algorithm::kHierarchical) << name_of(c) << " " << bytes;
      in.spans_hosts = false;
      EXPECT_NE(choose_algorithm(in), Algorithm::kHierarchical) << name_of(c) << " " << bytes;
    }
  }
  // Large all_reduce too: a flat algorithm's 8 ranks per host put 8 times the bytes on its
  // link, the leaders one reduced buffer.
  EXPECT_EQ(choose_algorithm(on_hosts(OpKind::kAllReduce, 64 << 20, 16, 2, 8)),
            Algorithm::kHierarchical);
  // Scan has no hierarchical algorithm.
  EXPECT_EQ(choose_algorithm(on_hosts(OpKind::kScan, 1 << 20, 16, 2, 8)),
            Algorithm::kRecursiveDoubling);
}

// The flat pairwise all_to_all posts every exchange at once (one latency), which the leaders'
// exchange cannot beat by more than the phases within hosts cost: for small even calls the
// model picks it. With split sizes each rank sees its own bytes, and all go hierarchical.
TEST(Selector, SmallEvenAllToAllGoesFlatAndSplitSizesGoHierarchical) {
  SelectionInput in = on_hosts(OpKind::kAllToAll, 8, 16, 2, 8);
  EXPECT_EQ(choose_algorithm(in), Algorithm::kPairwise);
  in.equal_blocks = false;
  EXPECT_EQ(choose_algorithm(in), Algorithm::kHierarchical);
}

// One rank on most hosts: the leaders are almost as many as the ranks, so the hierarchy saves
// no message and adds its phases; the flat algorithm wins.
TEST(Selector, OneRankOnMostHostsGoesFlat) {
  // 7 hosts, one of 2 ranks: recursive doubling on 8 ranks (3 rounds) against 7 leaders (2
  // rounds plus a fold and an unfold) and two phases.
  EXPECT_EQ(choose_algorithm(on_hosts(OpKind::kAllReduce, 8, 8, 7, 2)),
            Algorithm::kRecursiveDoubling);
  // 3 hosts, one of 2 ranks: a dissemination barrier of 2 rounds either way, plus the phases.
  EXPECT_EQ(choose_algorithm(on_hosts(OpKind::kBarrier, 0, 4, 3, 2)), Algorithm::kDissemination);
  // Yet with 2 hosts of 2 and 1 the hierarchy saves a level of the binomial tree (2 against
  // the leaders' 1), which is worth more than its two phases.
  EXPECT_EQ(choose_algorithm(on_hosts(OpKind::kBroadcast, 8, 3, 2, 2)), Algorithm::kHierarchical);
}

// Over a grid of layouts and sizes the choice is the faster of the model's two predictions,
// on the job's numbers (WEFT_SHM_* included), and forcing either still works.
TEST(Selector, AcrossHostsTheModelsFasterPredictionRuns) {
  util::NetworkSettings job;
  job.shm_alpha_s = 50e-6;  // a slow shared memory tips small calls to flat
  const NetworkModel own = selector_network_model();
  const NetworkModel slow_shm = selector_network_model(job);
  EXPECT_EQ(slow_shm.shm_alpha_s, 50e-6);
  EXPECT_EQ(slow_shm.shm_beta_s_per_byte, own.shm_beta_s_per_byte);
  EXPECT_EQ(slow_shm.alpha_s, own.alpha_s);
  for (const HostSpread spread : {HostSpread{16, 2, 8}, HostSpread{6, 3, 3}, HostSpread{5, 2, 3},
                                  HostSpread{8, 7, 2}, HostSpread{64, 8, 8}}) {
    for (std::size_t bytes :
         {std::size_t{0}, std::size_t{8}, std::size_t{64} << 10, std::size_t{16} << 20}) {
      for (OpKind c : kWithHierarchical) {
        for (const util::NetworkSettings* given :
             {static_cast<util::NetworkSettings*>(nullptr), &job}) {
          const NetworkModel network = given ? slow_shm : own;
          const bool even = spread.even();
          const Algorithm flat = choose_over_network(c, spread.ranks, bytes, true,
                                                     sharing_links(network, spread.largest_host));
          const Algorithm leaders = choose_over_network(c, spread.hosts, bytes, even, network);
          const bool hierarchical_faster =
              predicted_hierarchical_seconds(c, leaders, spread, bytes, network) <=
              predicted_seconds_on_hosts(c, flat, spread, bytes, network);
          SelectionInput in = on_hosts(c, bytes, spread.ranks, spread.hosts, spread.largest_host);
          in.network = given;
          EXPECT_EQ(choose_algorithm(in), hierarchical_faster ? Algorithm::kHierarchical : flat)
              << name_of(c) << " " << spread.ranks << " ranks on " << spread.hosts
              << " hosts, bytes " << bytes;
          in.forced = "hierarchical";
          EXPECT_EQ(choose_algorithm(in), Algorithm::kHierarchical);
          in.forced = name_of(flat);
          EXPECT_EQ(choose_algorithm(in), flat);
        }
      }
    }
  }
}

TEST(Selector, AGroupOverHostsWithoutItsLayoutIsAnInternalError) {
  SelectionInput in = input(OpKind::kAllReduce, 8, 8);
  in.spans_hosts = true;
  Error error = error_of([&] { choose_algorithm(in); });
  EXPECT_EQ(error.code(), ErrorCode::kInternal);
  EXPECT_EQ(error.message(),
            "the selector was asked for all_reduce on a group over hosts without its layout: 0 "
            "hosts, the largest with 0 of 8 ranks");
}

// WEFT_ALGO=hierarchical (or a call's option) forces it on every collective that has it, the
// leaders' own algorithm then chosen without it.
TEST(Selector, HierarchicalCanBeForcedOnEveryCollectiveThatHasIt) {
  const std::string setting = "hierarchical";
  for (OpKind c : {OpKind::kAllReduce, OpKind::kBroadcast, OpKind::kReduce, OpKind::kAllGather,
                   OpKind::kReduceScatter, OpKind::kAllToAll, OpKind::kGather, OpKind::kScatter,
                   OpKind::kBarrier}) {
    SelectionInput in = input(c, 64, 4);
    in.algorithm_setting = &setting;
    EXPECT_EQ(choose_algorithm(in), Algorithm::kHierarchical) << name_of(c);
    EXPECT_NE(choose_without_shared_memory(in), Algorithm::kHierarchical) << name_of(c);
    in.algorithm_setting = nullptr;
    in.forced = "hierarchical";
    EXPECT_EQ(choose_algorithm(in), Algorithm::kHierarchical) << name_of(c);
  }
  SelectionInput in = input(OpKind::kScan, 64, 4);
  in.algorithm_setting = &setting;
  EXPECT_EQ(choose_algorithm(in), Algorithm::kRecursiveDoubling);
}

TEST(Selector, AForcedNameWinsAndTheFallbackIgnoresIt) {
  SelectionInput in = input(OpKind::kAllReduce, 8, 2);
  in.single_host = true;
  in.forced = "ring";
  EXPECT_EQ(choose_algorithm(in), Algorithm::kRing);
  in.forced = "shm";
  EXPECT_EQ(choose_without_shared_memory(in), Algorithm::kRecursiveDoubling);
  in.forced = "no_such";
  Error error = error_of([&] { choose_algorithm(in); });
  EXPECT_EQ(error.message(),
            "all_reduce has no algorithm 'no_such' (valid: ring, recursive_doubling, "
            "rabenseifner, naive, shm, hierarchical)");
}

TEST(Selector, EveryAlgorithmIsFoundByItsName) {
  for (OpKind c : {OpKind::kAllReduce, OpKind::kBroadcast, OpKind::kReduce, OpKind::kAllGather,
                   OpKind::kGather, OpKind::kScatter, OpKind::kReduceScatter, OpKind::kAllToAll,
                   OpKind::kBarrier, OpKind::kScan}) {
    for (Algorithm algorithm : algorithms_of(c)) {
      SelectionInput in = input(c, 64, 4);
      in.forced = name_of(algorithm);
      EXPECT_EQ(choose_algorithm(in), algorithm) << name_of(c) << " " << name_of(algorithm);
    }
  }
}

TEST(Selector, WeftAlgoCanAskForSharedMemory) {
  setenv("WEFT_ALGO", "all_reduce=shm,broadcast=binomial", 1);
  SelectionInput in = input(OpKind::kAllReduce, 1 << 20, 3);
  EXPECT_EQ(choose_algorithm(in), Algorithm::kShm);
  in.collective = OpKind::kBroadcast;
  in.single_host = true;
  EXPECT_EQ(choose_algorithm(in), Algorithm::kBinomial);
  setenv("WEFT_ALGO", "all_reduce=no_such", 1);
  in.collective = OpKind::kAllReduce;
  Error error = error_of([&] { choose_algorithm(in); });
  EXPECT_NE(error.message().find("WEFT_ALGO='all_reduce=no_such': all_reduce has no algorithm "
                                 "'no_such'"),
            std::string::npos)
      << error.message();
  unsetenv("WEFT_ALGO");
}

// The job's numbers (WEFT_NET_*, as a group carries them) replace the selector's own part by
// part, and the selector then picks what the cost model says for those numbers.
TEST(Selector, TheJobsNetworkNumbersDriveTheChoice) {
  const NetworkModel& own = selector_network_model();
  util::NetworkSettings given;
  given.alpha_s = 1e-3;  // a very slow network's latency
  const NetworkModel slow = selector_network_model(given);
  EXPECT_EQ(slow.alpha_s, 1e-3);
  EXPECT_EQ(slow.beta_s_per_byte, own.beta_s_per_byte);
  EXPECT_EQ(slow.gamma_s_per_byte, own.gamma_s_per_byte);

  // 256 KiB on 4 ranks: Rabenseifner (4 messages) on the selector's network; with 1 ms
  // messages recursive doubling (2 messages of the whole buffer) wins, as a plain computation
  // of the two formulas says.
  const double n = 256 << 10, beta = own.beta_s_per_byte, gamma = own.gamma_s_per_byte;
  const double rd = 2 * (1e-3 + n * beta) + 2 * n * gamma;
  const double rab = 4 * 1e-3 + 2 * 0.75 * n * beta + 0.75 * n * gamma;
  ASSERT_LT(rd, rab);
  SelectionInput in = input(OpKind::kAllReduce, 256 << 10, 4);
  EXPECT_EQ(choose_algorithm(in), Algorithm::kRabenseifner);
  in.network = &given;
  EXPECT_EQ(choose_algorithm(in), Algorithm::kRecursiveDoubling);
  // None given: the selector's own numbers.
  const util::NetworkSettings none;
  in.network = &none;
  EXPECT_EQ(choose_algorithm(in), Algorithm::kRabenseifner);

  // Over a grid of networks, groups and sizes the selector's choice is the model's fastest of
  // the candidates it allows, on the given numbers, and it falls back without shared memory
  // on the same numbers.
  for (double alpha : {1e-6, 1e-5, 1e-3}) {
    for (double gbit : {1.0, 10.0, 100.0}) {
      util::NetworkSettings job;
      job.alpha_s = alpha;
      job.beta_s_per_byte = 8 / (gbit * 1e9);
      job.gamma_s_per_byte = 1 / 6e9;
      const NetworkModel network{alpha, 8 / (gbit * 1e9), 1 / 6e9};
      for (int p : {2, 3, 4, 6, 8, 64, 1000}) {
        for (std::size_t bytes :
             {std::size_t{8}, std::size_t{64} << 10, std::size_t{1} << 20, std::size_t{64} << 20}) {
          for (OpKind c : {OpKind::kAllReduce, OpKind::kBroadcast, OpKind::kAllGather}) {
            SelectionInput job_input = input(c, bytes, p);
            job_input.network = &job;
            const Algorithm expected = choose_over_network(c, p, bytes, true, network);
            EXPECT_EQ(choose_algorithm(job_input), expected)
                << name_of(c) << " p=" << p << " bytes=" << bytes << " alpha=" << alpha;
            job_input.single_host = true;
            EXPECT_EQ(choose_without_shared_memory(job_input), expected);
          }
          // all_reduce's candidates are all of the model's but naive.
          const Algorithm candidates[] = {Algorithm::kRecursiveDoubling, Algorithm::kRabenseifner,
                                          Algorithm::kRing};
          EXPECT_EQ(choose_over_network(OpKind::kAllReduce, p, bytes, true, network),
                    fastest_of(OpKind::kAllReduce, candidates, p, bytes, network))
              << "p=" << p << " bytes=" << bytes;
        }
      }
    }
  }
}

}  // namespace
}  // namespace weft::coll
