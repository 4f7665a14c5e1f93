// The selector's choices: shared memory for a group on one host (whatever the size, so that
// ranks of an uneven call agree), hierarchical for a group over hosts with neighbours, by size
// otherwise; what a forced name and WEFT_ALGO do; the fallback when no window can be mapped.
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

TEST(Selector, SeveralHostsWithNeighboursGoHierarchical) {
  for (OpKind c : {OpKind::kAllReduce, OpKind::kBroadcast, OpKind::kReduce, OpKind::kAllGather,
                   OpKind::kReduceScatter, OpKind::kAllToAll, OpKind::kGather, OpKind::kScatter,
                   OpKind::kBarrier}) {
    for (std::size_t bytes : {std::size_t{0}, std::size_t{8}, std::size_t{64} << 20}) {
      SelectionInput in = input(c, bytes, 8);
      in.spans_hosts = true;
      in.equal_blocks = bytes != 8;
      EXPECT_EQ(choose_algorithm(in), Algorithm::kHierarchical) << name_of(c) << " " << bytes;
      // Without neighbours on any host (or over TCP only), the flat algorithm.
      in.spans_hosts = false;
      EXPECT_NE(choose_algorithm(in), Algorithm::kHierarchical) << name_of(c) << " " << bytes;
    }
  }
  // Scan has no hierarchical algorithm.
  SelectionInput in = input(OpKind::kScan, 1 << 20, 8);
  in.spans_hosts = true;
  EXPECT_EQ(choose_algorithm(in), Algorithm::kRecursiveDoubling);
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
