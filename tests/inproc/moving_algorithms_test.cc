// The data-movement algorithms of the coll layer, run directly on CollectiveCalls (no API, no
// selector): broadcast (binomial, scatter + all-gather), all-gather (ring, Bruck), gather,
// scatter, all-to-all (pairwise) and barrier (dissemination), for world sizes 1..8 including
// non-powers of two, byte counts from 0 up, uneven and zero per-rank counts, every root, and
// multi-segment pipelines. Every rank derives the expected bytes from (seed, rank, index).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "coll/all_gather/bruck_all_gather.h"
#include "coll/all_gather/ring_all_gather.h"
#include "coll/all_to_all/pairwise_all_to_all.h"
#include "coll/barrier/dissemination_barrier.h"
#include "coll/broadcast/binomial_broadcast.h"
#include "coll/broadcast/scatter_allgather_broadcast.h"
#include "coll/gather/binomial_gather.h"
#include "coll/scatter/binomial_scatter.h"
#include "coll/shm/shm_collectives.h"
#include "support/collective_harness.h"
#include "support/errors.h"
#include "support/thread_ranks.h"

namespace weft {
namespace {

using core::OpKind;
using testing::error_of;
using testing::make_call;
using testing::pattern_data;
using testing::run_ranks_leaving_in_turn;

constexpr uint8_t kUntouched = 0xEE;  // never produced by pattern() (< 113)
constexpr std::size_t kLarge = (1u << 20) + 3;
const int kWorlds[] = {1, 2, 3, 4, 5, 7, 8};

bool has_large(int world) { return world == 3 || world == 8; }

// The byte counts every test sweeps for a world of p ranks.
std::vector<std::size_t> sizes_for(int p) {
  std::vector<std::size_t> sizes{0, 1, static_cast<std::size_t>(p - 1),
                                 static_cast<std::size_t>(p + 1), 1023};
  if (has_large(p)) sizes.push_back(kLarge);
  return sizes;
}

// "" when equal, else where and how they first differ.
std::string difference(const uint8_t* got, const uint8_t* want, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (got[i] != want[i]) {
      return "byte " + std::to_string(i) + " of " + std::to_string(n) + ": got " +
             std::to_string(got[i]) + ", want " + std::to_string(want[i]);
    }
  }
  return "";
}
std::string difference(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  if (got.size() != want.size()) return "sizes differ";
  return difference(got.data(), want.data(), got.size());
}

std::string where(const char* what, int p, int rank, std::size_t bytes, int root = -1) {
  return std::string(what) + " p=" + std::to_string(p) + " rank=" + std::to_string(rank) +
         " bytes=" + std::to_string(bytes) + (root >= 0 ? " root=" + std::to_string(root) : "");
}

std::vector<std::size_t> prefix(const std::vector<std::size_t>& counts) {
  std::vector<std::size_t> offsets(counts.size() + 1, 0);
  for (std::size_t i = 0; i < counts.size(); ++i) offsets[i + 1] = offsets[i] + counts[i];
  return offsets;
}

// Per-rank counts for a world of p: equal, uneven with zero-size ranks, one rank only.
std::vector<std::vector<std::size_t>> count_sets(int p, std::size_t m) {
  std::vector<std::vector<std::size_t>> sets;
  sets.emplace_back(p, m);
  std::vector<std::size_t> uneven(p), last_only(p, 0);
  for (int r = 0; r < p; ++r) uneven[r] = r % 3 == 0 ? 0 : m + r;
  last_only[p - 1] = m + 1;
  sets.push_back(uneven);
  sets.push_back(last_only);
  return sets;
}

// ---------------------------------------------------------------------------------------------
// broadcast

using BroadcastFn = void (*)(coll::CollectiveCall&, void*, std::size_t, int);

void check_broadcast(BroadcastFn broadcast, const char* name, std::size_t segment_bytes,
                     bool large_only_at_ends) {
  for (int world : kWorlds) {
    run_ranks_leaving_in_turn(world, [&](ProcessGroup& group) {
      const int p = group.size(), rank = group.rank();
      int seed = 0;
      for (std::size_t bytes : sizes_for(p)) {
        for (int root = 0; root < p; ++root) {
          if (bytes == kLarge && large_only_at_ends && root != 0 && root != p - 1) continue;
          ++seed;
          std::vector<uint8_t> want = pattern_data<uint8_t>(seed, root, bytes);
          std::vector<uint8_t> data = rank == root ? want : std::vector<uint8_t>(bytes, kUntouched);
          auto call = make_call(group, name, OpKind::kBroadcast, DType::kUInt8, bytes,
                                ReduceOp::kSum, root, segment_bytes);
          broadcast(call, data.data(), bytes, root);
          EXPECT_EQ(difference(data, want), "") << where(name, p, rank, bytes, root);
        }
      }
    });
  }
}

TEST(MovingAlgorithms, BinomialBroadcast) {
  check_broadcast(coll::binomial_broadcast, "binomial_broadcast", 1u << 20, true);
}

TEST(MovingAlgorithms, BinomialBroadcastPipelinesSegments) {
  // 64-byte segments: 1023 bytes run 16 segments down the tree (the last one 63 bytes), the
  // large message 16385 (the last one 3 bytes).
  check_broadcast(coll::binomial_broadcast, "binomial_broadcast", 64, true);
}

TEST(MovingAlgorithms, SharedMemoryBroadcast) {
  check_broadcast(coll::shm_broadcast, "shm_broadcast", 1u << 20, false);
}

TEST(MovingAlgorithms, SharedMemoryBroadcastInManyRounds) {
  // 256-byte rounds (the smallest): the large message takes 65 rounds.
  check_broadcast(coll::shm_broadcast, "shm_broadcast", 256, true);
}

TEST(MovingAlgorithms, ScatterAllGatherBroadcast) {
  check_broadcast(coll::scatter_allgather_broadcast, "scatter_allgather_broadcast", 1u << 20, true);
}

// 64 KiB segments: 17 of them, the last one 3 bytes.
TEST(MovingAlgorithms, BroadcastLargeMessageInManySegments) {
  run_ranks_leaving_in_turn(5, [](ProcessGroup& group) {
    for (int root : {0, 3}) {
      std::vector<uint8_t> want = pattern_data<uint8_t>(root + 100, root, kLarge);
      std::vector<uint8_t> data =
          group.rank() == root ? want : std::vector<uint8_t>(kLarge, kUntouched);
      auto call = make_call(group, "binomial_broadcast", OpKind::kBroadcast, DType::kUInt8, kLarge,
                            ReduceOp::kSum, root, 64u << 10);
      coll::binomial_broadcast(call, data.data(), kLarge, root);
      EXPECT_EQ(difference(data, want), "") << where("segmented", 5, group.rank(), kLarge, root);
    }
  });
}

// ---------------------------------------------------------------------------------------------
// all_gather

using AllGatherFn = void (*)(coll::CollectiveCall&, const void*, void*,
                             std::span<const std::size_t>);

// The expected output of an all-gather of `counts` with `seed`.
std::vector<uint8_t> gathered(int seed, const std::vector<std::size_t>& counts) {
  std::vector<uint8_t> all;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    auto block = pattern_data<uint8_t>(seed, static_cast<int>(r), counts[r]);
    all.insert(all.end(), block.begin(), block.end());
  }
  return all;
}

// One call with these per-rank byte counts, in place or not, checked against a plain gather.
void check_all_gather_case(ProcessGroup& group, AllGatherFn all_gather, const char* name,
                           const std::vector<std::size_t>& counts, bool in_place, int seed,
                           std::size_t segment_bytes) {
  const int p = group.size(), rank = group.rank();
  auto offsets = prefix(counts);
  std::vector<uint8_t> want = gathered(seed, counts);
  std::vector<uint8_t> mine = pattern_data<uint8_t>(seed, rank, counts[rank]);
  std::vector<uint8_t> output(offsets[p], kUntouched);
  const void* input = mine.data();
  if (in_place) {
    std::copy(mine.begin(), mine.end(), output.begin() + offsets[rank]);
    input = output.data() + offsets[rank];
  }
  auto call = make_call(group, name, OpKind::kAllGather, DType::kUInt8, offsets[p], ReduceOp::kSum,
                        -1, segment_bytes);
  all_gather(call, input, output.data(), counts);
  EXPECT_EQ(difference(output, want), "")
      << where(name, p, rank, offsets[p]) << (in_place ? " in place" : "") << ", block of rank 0 "
      << counts[0] << " bytes";
}

void check_all_gather(AllGatherFn all_gather, const char* name, bool equal_only,
                      std::size_t segment_bytes = 1u << 20) {
  for (int world : kWorlds) {
    run_ranks_leaving_in_turn(world, [&](ProcessGroup& group) {
      const int p = group.size();
      int seed = 0;
      for (std::size_t m : sizes_for(p)) {
        auto sets = count_sets(p, m);
        if (equal_only || m == kLarge) sets.resize(1);
        for (const auto& counts : sets) {
          for (bool in_place : {false, true}) {
            check_all_gather_case(group, all_gather, name, counts, in_place, ++seed, segment_bytes);
          }
        }
      }
    });
  }
}

// Large blocks in several rounds: equal, uneven with an empty one, and an output of more than
// util::kStreamOutputFrom (written with streaming stores); in place or not.
void check_large_shm_all_gather() {
  for (int world : {2, 3}) {
    run_ranks_leaving_in_turn(world, [](ProcessGroup& group) {
      const int p = group.size();
      std::vector<std::vector<std::size_t>> sets{std::vector<std::size_t>(p, (512u << 10) + 5),
                                                 std::vector<std::size_t>(p, (4u << 20) + 100)};
      std::vector<std::size_t> uneven(p);
      for (int r = 0; r < p; ++r) uneven[r] = r == 1 ? 0 : (600u << 10) + 64 * r + 1;
      sets.push_back(uneven);
      int seed = 500;
      for (const auto& counts : sets) {
        for (bool in_place : {false, true}) {
          check_all_gather_case(group, coll::shm_all_gather, "shm_all_gather", counts, in_place,
                                ++seed, 1u << 20);
        }
      }
    });
  }
}

TEST(MovingAlgorithms, RingAllGather) {
  check_all_gather(coll::ring_all_gather, "ring_all_gather", false);
}

TEST(MovingAlgorithms, BruckAllGather) {
  check_all_gather(coll::bruck_all_gather, "bruck_all_gather", true);
}

TEST(MovingAlgorithms, SharedMemoryAllGather) {
  check_all_gather(coll::shm_all_gather, "shm_all_gather", false);
  check_all_gather(coll::shm_all_gather, "shm_all_gather", false, 256);
}

// The API's all_gather into one buffer: every block the same size, no size list.
void shm_even_all_gather(coll::CollectiveCall& call, const void* input, void* output,
                         std::span<const std::size_t> counts) {
  coll::shm_even_all_gather(call, input, output, counts[0]);
}

TEST(MovingAlgorithms, SharedMemoryEvenAllGather) {
  check_all_gather(shm_even_all_gather, "shm_even_all_gather", true);
  check_all_gather(shm_even_all_gather, "shm_even_all_gather", true, 256);
  // Either side of the largest block that travels in the arrival lines.
  for (int world : {2, 3}) {
    run_ranks_leaving_in_turn(world, [](ProcessGroup& group) {
      int seed = 700;
      for (std::size_t block : {std::size_t{16}, std::size_t{17}}) {
        for (bool in_place : {false, true}) {
          check_all_gather_case(group, shm_even_all_gather, "shm_even_all_gather",
                                std::vector<std::size_t>(group.size(), block), in_place, ++seed,
                                1u << 20);
        }
      }
    });
  }
}

TEST(MovingAlgorithms, SharedMemoryAllGatherLargeUnevenAndStreamed) {
  check_large_shm_all_gather();
}

TEST(MovingAlgorithms, BruckAllGatherRefusesUnevenCounts) {
  run_ranks_leaving_in_turn(3, [](ProcessGroup& group) {
    std::vector<std::size_t> counts{4, 5, 4};
    std::vector<uint8_t> input(counts[group.rank()]), output(13);
    auto call = make_call(group, "bruck_all_gather", OpKind::kAllGather, DType::kUInt8, 4);
    Error error =
        error_of([&] { coll::bruck_all_gather(call, input.data(), output.data(), counts); });
    EXPECT_EQ(error.code(), ErrorCode::kInternal);
  });
}

// ---------------------------------------------------------------------------------------------
// gather and scatter

TEST(MovingAlgorithms, BinomialGather) {
  for (int world : kWorlds) {
    run_ranks_leaving_in_turn(world, [&](ProcessGroup& group) {
      const int p = group.size(), rank = group.rank();
      int seed = 0;
      for (std::size_t m : sizes_for(p)) {
        auto sets = count_sets(p, m);
        if (m == kLarge) sets.resize(1);
        for (const auto& counts : sets) {
          for (int root = 0; root < p; ++root) {
            if (m == kLarge && root != 0 && root != p - 1) continue;
            ++seed;
            auto offsets = prefix(counts);
            std::vector<uint8_t> mine = pattern_data<uint8_t>(seed, rank, counts[rank]);
            // Non-roots pass no output: writing there would crash.
            std::vector<uint8_t> output(rank == root ? offsets[p] : 0, kUntouched);
            auto call = make_call(group, "binomial_gather", OpKind::kGather, DType::kUInt8, m,
                                  ReduceOp::kSum, root);
            coll::binomial_gather(call, mine.data(), rank == root ? output.data() : nullptr, counts,
                                  root);
            if (rank == root) {
              EXPECT_EQ(difference(output, gathered(seed, counts)), "")
                  << where("binomial_gather", p, rank, m, root);
            }
          }
        }
      }
    });
  }
}

TEST(MovingAlgorithms, BinomialScatter) {
  for (int world : kWorlds) {
    run_ranks_leaving_in_turn(world, [&](ProcessGroup& group) {
      const int p = group.size(), rank = group.rank();
      int seed = 0;
      for (std::size_t m : sizes_for(p)) {
        auto sets = count_sets(p, m);
        if (m == kLarge) sets.resize(1);
        for (const auto& counts : sets) {
          for (int root = 0; root < p; ++root) {
            if (m == kLarge && root != 0 && root != p - 1) continue;
            ++seed;
            // The root's input is what an all-gather of seed would produce.
            std::vector<uint8_t> input =
                rank == root ? gathered(seed, counts) : std::vector<uint8_t>{};
            std::vector<uint8_t> output(counts[rank], kUntouched);
            auto call = make_call(group, "binomial_scatter", OpKind::kScatter, DType::kUInt8, m,
                                  ReduceOp::kSum, root);
            coll::binomial_scatter(call, rank == root ? input.data() : nullptr, output.data(),
                                   counts, root);
            EXPECT_EQ(difference(output, pattern_data<uint8_t>(seed, rank, counts[rank])), "")
                << where("binomial_scatter", p, rank, m, root);
          }
        }
      }
    });
  }
}

// ---------------------------------------------------------------------------------------------
// all_to_all

// Bytes rank `from` sends rank `to`: uneven, zero for some pairs (variants 1, 2); rank 0 sends
// little and the others much (3: the members' round-0 plans differ in the window).
std::size_t pair_bytes(int from, int to, std::size_t m, int variant) {
  if (variant == 0) return m;
  if (variant == 3) return from == 0 ? static_cast<std::size_t>(1 + to) : m + to;
  if ((from * 3 + to * 5 + variant) % 4 == 0) return 0;
  return m + static_cast<std::size_t>(from + 2 * to);
}

using AllToAllFn = void (*)(coll::CollectiveCall&, const void*, std::span<const std::size_t>,
                            std::span<const std::size_t>, void*, std::span<const std::size_t>,
                            std::span<const std::size_t>);

// One all_to_all of blocks pair_bytes(m, variant) against the bytes every rank derives for
// itself. In place (output in the input buffer, at the same offsets: variant 0 only) when
// `in_place` says so for this rank.
void check_all_to_all_case(ProcessGroup& group, AllToAllFn all_to_all, const char* name,
                           std::size_t segment_bytes, int seed, std::size_t m, int variant,
                           bool in_place = false) {
  const int p = group.size(), rank = group.rank();
  // Blocks laid out with a 3-byte gap after each, to check offsets are honoured.
  std::vector<std::size_t> send_bytes(p), send_offsets(p), recv_bytes(p), recv_offsets(p);
  std::size_t send_total = 0, recv_total = 0;
  for (int peer = 0; peer < p; ++peer) {
    send_bytes[peer] = pair_bytes(rank, peer, m, variant);
    recv_bytes[peer] = pair_bytes(peer, rank, m, variant);
    send_offsets[peer] = send_total;
    send_total += send_bytes[peer] + 3;
  }
  // Reverse order on the receive side: offsets need not be increasing.
  for (int peer = p - 1; peer >= 0; --peer) {
    recv_offsets[peer] = recv_total;
    recv_total += recv_bytes[peer] + 3;
  }
  if (in_place) recv_offsets = send_offsets;
  std::vector<uint8_t> input(send_total, kUntouched), output(recv_total, kUntouched);
  for (int peer = 0; peer < p; ++peer) {
    auto block = pattern_data<uint8_t>(seed, rank * p + peer, send_bytes[peer]);
    std::copy(block.begin(), block.end(), input.begin() + send_offsets[peer]);
  }
  std::vector<uint8_t> want(in_place ? send_total : recv_total, kUntouched);
  for (int peer = 0; peer < p; ++peer) {
    auto block = pattern_data<uint8_t>(seed, peer * p + rank, recv_bytes[peer]);
    std::copy(block.begin(), block.end(), want.begin() + recv_offsets[peer]);
  }
  // As the API signs it: an even call carries its count (which its members then agree on),
  // an uneven one 0.
  const std::size_t count = variant == 0 ? m * static_cast<std::size_t>(p) : 0;
  auto call = make_call(group, name, OpKind::kAllToAll, DType::kUInt8, count, ReduceOp::kSum, -1,
                        segment_bytes);
  uint8_t* out = in_place ? input.data() : output.data();
  all_to_all(call, input.data(), send_bytes, send_offsets, out, recv_bytes, recv_offsets);
  EXPECT_EQ(difference(in_place ? input : output, want), "")
      << where(name, p, rank, m) << " variant " << variant << (in_place ? " in place" : "");
}

void check_all_to_all(AllToAllFn all_to_all, const char* name, std::size_t segment_bytes) {
  for (int world : kWorlds) {
    run_ranks_leaving_in_turn(world, [&](ProcessGroup& group) {
      const int p = group.size();
      int seed = 0;
      std::vector<std::size_t> sizes = sizes_for(p);
      if (has_large(p)) sizes.back() = kLarge / static_cast<std::size_t>(p);
      for (std::size_t m : sizes) {
        for (int variant : {0, 1, 2}) {
          check_all_to_all_case(group, all_to_all, name, segment_bytes, ++seed, m, variant);
        }
      }
    });
  }
}

TEST(MovingAlgorithms, PairwiseAllToAll) {
  check_all_to_all(coll::pairwise_all_to_all, "pairwise_all_to_all", 1u << 20);
}

TEST(MovingAlgorithms, SharedMemoryAllToAllWithAnySplits) {
  check_all_to_all(coll::shm_all_to_all, "shm_all_to_all", 1u << 20);
  // Many rounds. Not fewer bytes: round 0's header takes 8 (2 + 3p) bytes of each round, and
  // 256-byte rounds left 8 ranks 6-byte regions, 22,000 rounds for the largest size, which
  // under a loaded CI (8 threads on 2 cores, each round a turn of the scheduler) outlasted the
  // watchdog.
  check_all_to_all(coll::shm_all_to_all, "shm_all_to_all", 4096);
}

// The API's all_to_all without split sizes: `block` bytes to each member, blocks one after the
// other, in place (output = input) when `in_place` says so for this rank.
void check_even_all_to_all_case(ProcessGroup& group, std::size_t segment_bytes, int seed,
                                std::size_t block, bool in_place) {
  const int p = group.size(), rank = group.rank();
  const std::size_t total = block * static_cast<std::size_t>(p);
  std::vector<uint8_t> input, output(total, kUntouched), want;
  for (int peer = 0; peer < p; ++peer) {
    auto sent = pattern_data<uint8_t>(seed, rank * p + peer, block);
    input.insert(input.end(), sent.begin(), sent.end());
    auto received = pattern_data<uint8_t>(seed, peer * p + rank, block);
    want.insert(want.end(), received.begin(), received.end());
  }
  auto call = make_call(group, "shm_even_all_to_all", OpKind::kAllToAll, DType::kUInt8, total,
                        ReduceOp::kSum, -1, segment_bytes);
  uint8_t* out = in_place ? input.data() : output.data();
  coll::shm_even_all_to_all(call, input.data(), out, block);
  EXPECT_EQ(difference(in_place ? input : output, want), "")
      << where("shm_even_all_to_all", p, rank, block) << (in_place ? " in place" : "");
}

TEST(MovingAlgorithms, SharedMemoryEvenAllToAll) {
  // Blocks this small (16 bytes in all at most) take one round in the arrival lines; in place,
  // a member's output overwrites its input while the others still read what it sent. Larger
  // ones take rounds without a header up to the size of single-copy reads (64 KiB, or 512 KiB
  // when the members outnumber the cores), then the general form.
  for (int world : kWorlds) {
    run_ranks_leaving_in_turn(world, [&](ProcessGroup& group) {
      int seed = 200;
      const std::size_t tiny = 16 / static_cast<std::size_t>(group.size());
      for (std::size_t block : {std::size_t{0}, std::size_t{1}, tiny, tiny + 1, std::size_t{4099},
                                std::size_t{65'535}, std::size_t{65'536}, std::size_t{70'001}}) {
        for (bool all : {false, true}) {
          check_even_all_to_all_case(group, 1u << 20, ++seed, block,
                                     /*in_place=*/all || group.rank() == 0);
        }
        check_even_all_to_all_case(group, 4096, ++seed, block, /*in_place=*/false);
      }
    });
  }
}

// Around and above the size from which members read their pieces straight from the senders'
// buffers (single copy), in every way the members' round-0 plans can differ: some send little
// (their round 0 carries data, the others' does not), some in place (they cannot be read from
// while they write, so all copy through the slots, starting in round 1), or all in place.
void check_large_shm_all_to_all() {
  for (int world : {2, 3, 4}) {
    run_ranks_leaving_in_turn(world, [&](ProcessGroup& group) {
      int seed = 100;
      for (std::size_t m : {std::size_t{64 * 1024 - 1}, std::size_t{64 * 1024},
                            std::size_t{100'003}, std::size_t{(1u << 20) + 5}}) {
        for (int variant : {0, 1, 2, 3}) {
          check_all_to_all_case(group, coll::shm_all_to_all, "shm_all_to_all", 1u << 20, ++seed, m,
                                variant);
        }
        check_all_to_all_case(group, coll::shm_all_to_all, "shm_all_to_all", 1u << 20, ++seed, m, 0,
                              /*in_place=*/group.rank() == 0);
        check_all_to_all_case(group, coll::shm_all_to_all, "shm_all_to_all", 1u << 20, ++seed, m, 0,
                              /*in_place=*/true);
        // Many rounds after a round 0 that carried data only from rank 0.
        check_all_to_all_case(group, coll::shm_all_to_all, "shm_all_to_all", 4096, ++seed, m, 0,
                              /*in_place=*/group.rank() == 0);
      }
    });
  }
}

TEST(MovingAlgorithms, SharedMemoryAllToAllLargeReadsFromTheSenders) {
  check_large_shm_all_to_all();
}

TEST(MovingAlgorithms, SharedMemoryAllToAllLargeThroughTheSlotsWhenSingleCopyIsOff) {
  // Read when each group makes its window.
  setenv("WEFT_SHM_SINGLE_COPY", "off", 1);
  check_large_shm_all_to_all();
  check_all_to_all(coll::shm_all_to_all, "shm_all_to_all", 1u << 20);
  unsetenv("WEFT_SHM_SINGLE_COPY");
}

// ---------------------------------------------------------------------------------------------
// barrier

void check_barrier(void (*barrier)(coll::CollectiveCall&), const char* name) {
  for (int world : kWorlds) {
    constexpr int kRounds = 10;
    auto arrived = std::make_unique<std::atomic<int>[]>(kRounds);
    for (int t = 0; t < kRounds; ++t) arrived[t] = 0;
    run_ranks_leaving_in_turn(world, [&](ProcessGroup& group) {
      const int p = group.size(), rank = group.rank();
      for (int t = 0; t < kRounds; ++t) {
        // A different rank is late each round.
        if (rank == t % p) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        arrived[t].fetch_add(1);
        auto call = make_call(group, name, OpKind::kBarrier, DType::kUInt8, 0);
        barrier(call);
        EXPECT_EQ(arrived[t].load(), p) << "rank " << rank << " left barrier " << t << " early";
      }
    });
  }
}

TEST(MovingAlgorithms, DisseminationBarrierHoldsEveryoneUntilTheLastArrives) {
  check_barrier(coll::dissemination_barrier, "dissemination_barrier");
}

TEST(MovingAlgorithms, SharedMemoryBarrierHoldsEveryoneUntilTheLastArrives) {
  check_barrier(coll::shm_barrier, "shm_barrier");
}

}  // namespace
}  // namespace weft
