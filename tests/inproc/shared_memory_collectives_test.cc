// Collectives of groups that lie on one host, which the selector runs through the group's
// shared-memory window: concurrent groups and subgroups, a member that never comes (a timeout
// naming it), an abort, mismatched calls, and the switch back to TCP (WEFT_TRANSPORT=tcp).
// Results are checked against plain loops over what every rank contributed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>
#include <thread>
#include <vector>

#include "api/process_group_impl.h"
#include "core/communicator.h"
#include "support/errors.h"
#include "support/thread_ranks.h"

namespace weft {
namespace {

using testing::error_of;
using testing::run_ranks;
using testing::ThreadRanksOptions;

// The sum over ranks r < world of (r + 1) * (i + 1), exactly representable in float.
float expected_sum(int world, std::size_t i) {
  return static_cast<float>(world * (world + 1) / 2) * static_cast<float>(i + 1);
}

std::vector<float> contribution(int rank, std::size_t count) {
  std::vector<float> data(count);
  for (std::size_t i = 0; i < count; ++i) data[i] = static_cast<float>((rank + 1) * (i + 1));
  return data;
}

TEST(SharedMemoryCollectives, ConcurrentGroupsOnEveryRankStayApart) {
  // Each rank runs the world group and its parity subgroup at once, on two threads, with
  // sizes that need many rounds (small segments): the windows and rounds must not mix.
  run_ranks(4, [](ProcessGroup& group) {
    auto parity = group.split(group.rank() % 2, group.rank());
    ASSERT_NE(parity, nullptr);
    for (int repeat = 0; repeat < 5; ++repeat) {
      std::vector<float> world_data = contribution(group.rank(), 3001);
      std::vector<float> sub_data = contribution(parity->rank(), 1777);
      auto sub_work = parity->iall_reduce(sub_data, ReduceOp::kSum, {"", 512});
      group.all_reduce(world_data, ReduceOp::kSum, {"", 1024});
      sub_work->wait();
      for (std::size_t i = 0; i < world_data.size(); ++i) {
        ASSERT_EQ(world_data[i], expected_sum(4, i)) << "world, index " << i;
      }
      for (std::size_t i = 0; i < sub_data.size(); ++i) {
        ASSERT_EQ(sub_data[i], expected_sum(2, i)) << "subgroup, index " << i;
      }
    }
  });
}

void check_every_collective_back_to_back() {
  for (int world : {2, 3, 5}) {
    run_ranks(world, [world](ProcessGroup& group) {
      const int me = group.rank();
      // 1'103 floats: slot pieces just over 4 KiB with a tail that is not a whole cache line.
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, static_cast<std::size_t>(world + 1),
                                std::size_t{1'103}, std::size_t{70'001}}) {
        std::vector<float> data = contribution(me, count);
        group.all_reduce(data);
        for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(data[i], expected_sum(world, i));

        std::vector<float> bcast = contribution(me, count);
        group.broadcast(bcast, world - 1);
        EXPECT_EQ(bcast, contribution(world - 1, count));

        std::vector<float> reduced = contribution(me, count);
        group.reduce(reduced, 0);
        if (me == 0) {
          for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(reduced[i], expected_sum(world, i));
        } else {
          EXPECT_EQ(reduced, contribution(me, count));
        }

        std::vector<float> all(count * world);
        group.all_gather(ConstBufferView(contribution(me, count)), BufferView(all));
        for (int r = 0; r < world; ++r) {
          auto want = contribution(r, count);
          ASSERT_TRUE(std::equal(want.begin(), want.end(), all.begin() + r * count));
        }

        std::vector<float> blocks = contribution(me, count * world), mine(count);
        group.reduce_scatter(ConstBufferView(blocks), BufferView(mine));
        for (std::size_t i = 0; i < count; ++i) {
          ASSERT_EQ(mine[i], expected_sum(world, me * count + i));
        }

        std::vector<float> sent = contribution(me, count * world), got(count * world);
        group.all_to_all(ConstBufferView(sent), BufferView(got));
        for (int r = 0; r < world; ++r) {
          auto theirs = contribution(r, count * world);
          ASSERT_TRUE(std::equal(got.begin() + r * count, got.begin() + (r + 1) * count,
                                 theirs.begin() + me * count));
        }
        group.barrier();
      }
    });
  }
}

TEST(SharedMemoryCollectives, ReduceScatterFromOneBufferOnSomeRanksAndAListOnOthers) {
  // One buffer takes a path without size lists; a list of equal blocks the general one. Both
  // must make the same rounds, tiny (in the arrival lines) or not.
  for (int world : {2, 3}) {
    run_ranks(world, [world](ProcessGroup& group) {
      const int me = group.rank();
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{5},
                                std::size_t{1'103}, std::size_t{70'001}}) {
        std::vector<float> blocks = contribution(me, count * world), mine(count, -1);
        if (me % 2 == 0) {
          group.reduce_scatter(ConstBufferView(blocks), BufferView(mine));
        } else {
          std::vector<ConstBufferView> list;
          for (int r = 0; r < world; ++r) {
            list.emplace_back(blocks.data() + r * count, count, DType::kFloat32);
          }
          group.reduce_scatter(list, BufferView(mine));
        }
        for (std::size_t i = 0; i < count; ++i) {
          ASSERT_EQ(mine[i], expected_sum(world, me * count + i)) << "count " << count;
        }
      }
    });
  }
}

TEST(SharedMemoryCollectives, EveryCollectiveBackToBackAtOddSizes) {
  check_every_collective_back_to_back();
}

// Both kinds of slot stores that the group may choose between (read when a group makes its
// window), each forced.
TEST(SharedMemoryCollectives, EveryCollectiveWithStreamingSlotStores) {
  setenv("WEFT_SHM_SLOT_STORES", "streaming", 1);
  check_every_collective_back_to_back();
  unsetenv("WEFT_SHM_SLOT_STORES");
}

TEST(SharedMemoryCollectives, EveryCollectiveWithOrdinarySlotStores) {
  setenv("WEFT_SHM_SLOT_STORES", "ordinary", 1);
  check_every_collective_back_to_back();
  unsetenv("WEFT_SHM_SLOT_STORES");
}

TEST(SharedMemoryCollectives, AMemberThatNeverComesIsATimeoutNamingIt) {
  ThreadRanksOptions options;
  options.timeout = std::chrono::milliseconds(800);
  run_ranks(
      3,
      [](ProcessGroup& group) {
        std::vector<float> data(8, 1.0f);
        group.all_reduce(data);
        if (group.rank() == 2) {
          // Stays away from the next collective until the others have given up.
          std::this_thread::sleep_for(std::chrono::milliseconds(1500));
          return;
        }
        auto started = std::chrono::steady_clock::now();
        Error error = error_of([&] { group.all_reduce(data); });
        auto waited = std::chrono::steady_clock::now() - started;
        // The first to give up times out naming rank 2; the other may hear of it first.
        EXPECT_TRUE(error.code() == ErrorCode::kTimeout || error.code() == ErrorCode::kAborted)
            << error.what();
        EXPECT_NE(std::string(error.what()).find("rank 2 had not reached"), std::string::npos)
            << error.what();
        EXPECT_LT(waited, std::chrono::milliseconds(1400));
      },
      options);
}

TEST(SharedMemoryCollectives, AbortWakesMembersWaitingInTheWindow) {
  run_ranks(3, [](ProcessGroup& group) {
    std::vector<float> data(8, 1.0f);
    group.all_reduce(data);
    if (group.rank() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      group.abort("stopped by the test");
      return;
    }
    auto started = std::chrono::steady_clock::now();
    Error error = error_of([&] { group.all_reduce(data); });
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
    EXPECT_NE(std::string(error.what()).find("stopped by the test"), std::string::npos)
        << error.what();
  });
}

TEST(SharedMemoryCollectives, AMemberThatDestroyedTheGroupIsNamedAtOnce) {
  run_ranks(2, [](ProcessGroup& group) {
    auto pair = group.new_group({0, 1});
    std::vector<float> data(8, 1.0f);
    pair->all_reduce(data);  // maps the pair's window
    if (group.rank() == 1) {
      pair.reset();
    } else {
      auto started = std::chrono::steady_clock::now();
      Error error = error_of([&] { pair->all_reduce(data); });
      EXPECT_EQ(error.code(), ErrorCode::kPeerFailure) << error.what();
      EXPECT_NE(std::string(error.what()).find("rank 1 destroyed the group"), std::string::npos)
          << error.what();
      EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
    }
    group.barrier();  // the world group is untouched
  });
}

TEST(SharedMemoryCollectives, MismatchedCallsNameWhatEachRankCalled) {
  run_ranks(2, [](ProcessGroup& group) {
    std::vector<float> data(group.rank() == 0 ? 16 : 32, 1.0f);
    Error error = error_of([&] {
      if (group.rank() == 0) {
        group.all_reduce(data);
      } else {
        group.broadcast(data, 0);
      }
    });
    EXPECT_TRUE(error.code() == ErrorCode::kMismatch) << error.what();
    std::string what = error.what();
    EXPECT_NE(what.find("all_reduce(count=16"), std::string::npos) << what;
    EXPECT_NE(what.find("broadcast(count=32"), std::string::npos) << what;
  });
}

TEST(SharedMemoryCollectives, SegmentSizesThatDifferBetweenRanksAreAMismatch) {
  run_ranks(2, [](ProcessGroup& group) {
    std::vector<float> data(100'000, 1.0f);
    CollectiveOptions options{"", group.rank() == 0 ? std::size_t{4096} : std::size_t{0}};
    Error error = error_of([&] { group.all_reduce(data, ReduceOp::kSum, options); });
    EXPECT_EQ(error.code(), ErrorCode::kMismatch) << error.what();
    EXPECT_NE(std::string(error.what()).find("segment_bytes differs"), std::string::npos)
        << error.what();
  });
}

TEST(SharedMemoryCollectives, AllToAllSplitSizesThatDisagreeAreAMismatchOnEveryRank) {
  // Small blocks go through the window's slots, large ones are read from the senders' buffers:
  // either way every rank learns what went wrong, not just the one that noticed.
  for (std::size_t block : {std::size_t{16}, std::size_t{256 * 1024}}) {
    run_ranks(3, [block](ProcessGroup& group) {
      std::vector<std::size_t> sends(3, block), recvs(3, block);
      if (group.rank() == 2) recvs[1] += 4;  // rank 1 sends it `block`
      std::vector<float> input(3 * block), output(recvs[0] + recvs[1] + recvs[2]);
      Error error = error_of(
          [&] { group.all_to_all(ConstBufferView(input), BufferView(output), sends, recvs); });
      EXPECT_EQ(error.code(), ErrorCode::kMismatch) << error.what();
      EXPECT_NE(std::string(error.what()).find("split sizes disagree: rank 1 sends"),
                std::string::npos)
          << error.what();
    });
  }
}

TEST(SharedMemoryCollectives, TcpWhenAskedGivesTheSameResults) {
  setenv("WEFT_TRANSPORT", "tcp", 1);
  run_ranks(3, [](ProcessGroup& group) {
    EXPECT_FALSE(api::communicator_of(group).single_host());
    std::vector<float> data = contribution(group.rank(), 5000);
    group.all_reduce(data);
    for (std::size_t i = 0; i < data.size(); ++i) ASSERT_EQ(data[i], expected_sum(3, i));
  });
  unsetenv("WEFT_TRANSPORT");
  run_ranks(3, [](ProcessGroup& group) { EXPECT_TRUE(api::communicator_of(group).single_host()); });
}

}  // namespace
}  // namespace weft
