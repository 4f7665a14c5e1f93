// Point-to-point between ranks that are threads: ordering, any source, sizes, batches, errors;
// every test over each path a message can take between two ranks of one host: TCP, shared
// memory with single-copy reads (process_vm_readv), shared memory copied through the ring.
#include <gtest/gtest.h>

#include <cstring>
#include <latch>
#include <numeric>
#include <optional>
#include <thread>

#include "support/errors.h"
#include "support/thread_ranks.h"

namespace weft {
namespace {

using testing::error_of;
using testing::pattern_data;
using testing::run_ranks;

// Sets the variables that pick a path for the length of a test.
class PathTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string& path = GetParam();
    setenv("WEFT_TRANSPORT", path == "tcp" || path == "ofi" ? path.c_str() : "auto", 1);
    setenv("WEFT_SHM_SINGLE_COPY", path == "shm_copy_through" ? "off" : "auto", 1);
    // libfabric's tcp provider: the one that runs on any host (a fabric's, where there is one,
    // goes through the same path).
    if (path == "ofi") setenv("WEFT_OFI_PROVIDER", "tcp", 1);
  }
  void TearDown() override {
    unsetenv("WEFT_TRANSPORT");
    unsetenv("WEFT_SHM_SINGLE_COPY");
    unsetenv("WEFT_OFI_PROVIDER");
  }
};

class PointToPoint : public PathTest {};
class PointToPointErrors : public PathTest {};

TEST_P(PointToPoint, BlockingSendRecvMovesTheData) {
  run_ranks(2, [](ProcessGroup& group) {
    std::vector<float> tensor(1, 0.0f);
    if (group.rank() == 0) {
      tensor[0] += 1;
      group.send(tensor, 1);
    } else {
      int source = group.recv(tensor, 0);
      EXPECT_EQ(source, 0);
      EXPECT_EQ(tensor[0], 1.0f);
    }
  });
}

TEST_P(PointToPoint, MessagesWithOneTagArriveInOrder) {
  constexpr int kMessages = 200;
  run_ranks(2, [](ProcessGroup& group) {
    if (group.rank() == 0) {
      std::vector<std::shared_ptr<Work>> works;
      std::vector<std::vector<int32_t>> data;
      for (int i = 0; i < kMessages; ++i) data.push_back(pattern_data<int32_t>(i, 0, 1 + i % 7));
      for (int i = 0; i < kMessages; ++i) works.push_back(group.isend(data[i], 1, 5));
      for (auto& work : works) work->wait();
    } else {
      for (int i = 0; i < kMessages; ++i) {
        std::vector<int32_t> got(1 + i % 7);
        group.recv(got, 0, 5);
        EXPECT_EQ(got, pattern_data<int32_t>(i, 0, 1 + i % 7)) << "message " << i;
      }
    }
  });
}

TEST_P(PointToPoint, TagsAreMatchedIndependently) {
  run_ranks(2, [](ProcessGroup& group) {
    std::vector<int32_t> a{1, 2, 3}, b{4, 5, 6};
    if (group.rank() == 0) {
      group.send(a, 1, /*tag=*/1);
      group.send(b, 1, /*tag=*/2);
    } else {
      std::vector<int32_t> got_b(3), got_a(3);
      group.recv(got_b, 0, 2);  // posted in the other order: tag 1 waits unexpected
      group.recv(got_a, 0, 1);
      EXPECT_EQ(got_a, a);
      EXPECT_EQ(got_b, b);
    }
  });
}

TEST_P(PointToPoint, AnySourceReportsTheSender) {
  run_ranks(4, [](ProcessGroup& group) {
    if (group.rank() != 0) {
      std::vector<int64_t> mine{group.rank() * 10};
      group.send(mine, 0, 3);
      return;
    }
    std::vector<int> seen;
    for (int i = 0; i < 3; ++i) {
      std::vector<int64_t> got(1);
      int source = group.recv(got, kAnySource, 3);
      EXPECT_EQ(got[0], source * 10);
      seen.push_back(source);
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<int>{1, 2, 3}));
  });
}

TEST_P(PointToPoint, ZeroLengthMessages) {
  run_ranks(2, [](ProcessGroup& group) {
    std::vector<float> empty;
    if (group.rank() == 0) {
      group.send(empty, 1);
    } else {
      EXPECT_EQ(group.recv(empty, 0), 0);
    }
  });
}

TEST_P(PointToPoint, LargeMessage256MiB) {
  constexpr std::size_t kCount = (256u << 20) / sizeof(int32_t);
  run_ranks(2, [](ProcessGroup& group) {
    std::vector<int32_t> data(kCount);
    if (group.rank() == 0) {
      for (std::size_t i = 0; i < kCount; ++i) data[i] = static_cast<int32_t>(i * 2654435761u);
      group.send(data, 1);
    } else {
      group.recv(data, 0);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < kCount; ++i) {
        wrong += data[i] != static_cast<int32_t>(i * 2654435761u);
      }
      EXPECT_EQ(wrong, 0u);
    }
  });
}

TEST_P(PointToPoint, SendToSelf) {
  run_ranks(1, [](ProcessGroup& group) {
    std::vector<double> out{1.5, 2.5}, in(2);
    auto receive = group.irecv(in, 0);
    group.send(out, 0);
    receive->wait();
    EXPECT_EQ(in, out);
  });
}

TEST_P(PointToPoint, ChainPassesATokenAlong) {
  // Seed 003's chain 0 -> 1 -> 2, each adding its rank.
  run_ranks(3, [](ProcessGroup& group) {
    std::vector<int32_t> token{0};
    if (group.rank() > 0) group.recv(token, group.rank() - 1);
    token[0] += group.rank() + 1;
    if (group.rank() < group.size() - 1)
      group.send(token, group.rank() + 1);
    else
      EXPECT_EQ(token[0], 1 + 2 + 3);
  });
}

TEST_P(PointToPoint, BatchExchangeInARingDoesNotDeadlock) {
  for (int world : {2, 3, 5}) {
    run_ranks(world, [](ProcessGroup& group) {
      int right = (group.rank() + 1) % group.size();
      int left = (group.rank() + group.size() - 1) % group.size();
      auto out = pattern_data<int32_t>(1, group.rank(), 100'000);
      std::vector<int32_t> in(out.size());
      auto works = group.batch_isend_irecv(
          {P2POp::send(ConstBufferView(out), right), P2POp::recv(BufferView(in), left)});
      for (auto& work : works) work->wait();
      EXPECT_EQ(in, pattern_data<int32_t>(1, left, 100'000));
      EXPECT_EQ(works[1]->source_rank(), left);
    });
  }
}

TEST_P(PointToPoint, WorkReportsCompletion) {
  run_ranks(2, [](ProcessGroup& group) {
    std::vector<int16_t> data(64, static_cast<int16_t>(group.rank()));
    if (group.rank() == 1) {
      auto work = group.irecv(data, 0);
      work->wait();
      EXPECT_TRUE(work->is_completed());
      EXPECT_TRUE(work->is_success());
      EXPECT_EQ(work->exception(), nullptr);
      EXPECT_EQ(data, std::vector<int16_t>(64, 0));
    } else {
      group.isend(data, 1)->wait();
    }
  });
}

TEST_P(PointToPointErrors, InvalidArgumentsAreRefusedBeforeSending) {
  run_ranks(2, [](ProcessGroup& group) {
    std::vector<float> data(4);
    EXPECT_EQ(error_of([&] { group.send(data, 2); }).code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(error_of([&] { group.send(data, -1); }).code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(error_of([&] { group.recv(data, 5); }).code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(error_of([&] { group.send(data, 1, -3); }).code(), ErrorCode::kInvalidArgument);
    Error null_buffer = error_of(
        [&] { group.send(ConstBufferView(nullptr, 4, DType::kFloat32), 1 - group.rank()); });
    EXPECT_EQ(null_buffer.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(null_buffer.what()).find("null"), std::string::npos);
    EXPECT_NE(std::string(null_buffer.what()).find("rank=" + std::to_string(group.rank())),
              std::string::npos);
    Error negative = error_of([&] {
      group.send(ConstBufferView(data.data(), static_cast<std::size_t>(-4), DType::kFloat32), 1);
    });
    EXPECT_EQ(negative.code(), ErrorCode::kInvalidArgument);
    // Nothing was sent: a real exchange still lines up afterwards.
    std::vector<float> value{static_cast<float>(group.rank())};
    if (group.rank() == 0)
      group.send(value, 1);
    else {
      group.recv(value, 0);
      EXPECT_EQ(value[0], 0.0f);
    }
  });
}

TEST_P(PointToPointErrors, DtypeOrCountMismatchIsReportedNotWritten) {
  run_ranks(2, [](ProcessGroup& group) {
    if (group.rank() == 0) {
      std::vector<float> four(4, 1.0f);
      group.send(four, 1);
      std::vector<int32_t> eight(8, 7);
      group.send(eight, 1, 1);
    } else {
      std::vector<int32_t> as_int(4, -1);
      Error dtype = error_of([&] { group.recv(as_int, 0); });
      EXPECT_EQ(dtype.code(), ErrorCode::kMismatch);
      EXPECT_NE(std::string(dtype.what()).find("float32"), std::string::npos) << dtype.what();
      EXPECT_NE(std::string(dtype.what()).find("int32"), std::string::npos) << dtype.what();
      EXPECT_EQ(as_int, std::vector<int32_t>(4, -1));
      std::vector<int32_t> too_small(2, -1);
      Error count = error_of([&] { group.recv(too_small, 0, 1); });
      EXPECT_EQ(count.code(), ErrorCode::kMismatch);
      EXPECT_NE(std::string(count.what()).find("count=8"), std::string::npos) << count.what();
      EXPECT_EQ(too_small, std::vector<int32_t>(2, -1));
    }
  });
}

TEST_P(PointToPointErrors, AStuckPeerIsATimeoutNamingIt) {
  testing::ThreadRanksOptions options;
  options.timeout = std::chrono::milliseconds(800);
  run_ranks(
      2,
      [](ProcessGroup& group) {
        std::vector<float> data(3);
        if (group.rank() == 1) {
          auto started = std::chrono::steady_clock::now();
          Error error = error_of([&] { group.recv(data, 0, 9); });
          auto waited = std::chrono::steady_clock::now() - started;
          EXPECT_EQ(error.code(), ErrorCode::kTimeout);
          EXPECT_NE(std::string(error.what()).find("rank 0"), std::string::npos) << error.what();
          EXPECT_NE(std::string(error.what()).find("op=recv"), std::string::npos) << error.what();
          EXPECT_LT(waited, std::chrono::seconds(5));
        }
        // Rank 0 never sends tag 9, and stays (stuck) past rank 1's deadline.
        if (group.rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      },
      options);
}

TEST_P(PointToPointErrors, WaitWithATimeoutCancelsTheReceive) {
  run_ranks(2, [](ProcessGroup& group) {
    std::vector<int32_t> data(2, -1);
    if (group.rank() == 1) {
      auto work = group.irecv(data, 0, 4);
      Error error = error_of([&] { work->wait(std::chrono::milliseconds(50)); });
      EXPECT_EQ(error.code(), ErrorCode::kTimeout);
      std::vector<int32_t> sync(1);
      group.send(sync, 0, 5);  // now rank 0 sends tag 4: it must not land in `data`
      std::vector<int32_t> fresh(2);
      group.recv(fresh, 0, 4);
      EXPECT_EQ(fresh, (std::vector<int32_t>{8, 9}));
      EXPECT_EQ(data, (std::vector<int32_t>{-1, -1}));
    } else {
      std::vector<int32_t> sync(1);
      group.recv(sync, 1, 5);
      std::vector<int32_t> late{8, 9};
      group.send(late, 1, 4);
    }
  });
}

// A send whose wait times out while the message is being taken (over shared memory the
// receiving side reads it straight from the sender's buffer as soon as it sees it, wanted yet
// or not): whatever the wait says, it returns only once the buffer is the caller's again.
TEST_P(PointToPointErrors, AWaitThatTimesOutMidTransferReturnsOnlyWhenTheBufferIsFree) {
  constexpr std::size_t kCount = std::size_t{32} << 20;  // 128 MiB: a transfer of tens of ms
  run_ranks(2, [&](ProcessGroup& group) {
    int round = 0;
    for (int timeout_ms : {2, 10, 30}) {
      ++round;
      std::vector<float> data(kCount, group.rank() == 0 ? static_cast<float>(round) : 0.0f);
      group.barrier();
      if (group.rank() == 0) {
        auto work = group.isend(data, 1, round);
        try {
          work->wait(std::chrono::milliseconds(timeout_ms));
        } catch (const Error& error) {
          EXPECT_EQ(error.code(), ErrorCode::kTimeout) << error.what();
        }
        EXPECT_TRUE(work->is_completed()) << timeout_ms << " ms: the send still runs";
      } else {
        auto work = group.irecv(data, 0, round);
        try {
          work->wait(std::chrono::milliseconds(2000));
          EXPECT_EQ(data.front(), static_cast<float>(round));
          EXPECT_EQ(data.back(), static_cast<float>(round));
        } catch (const Error& error) {
          // The sender withdrew the message in time: it never comes.
          EXPECT_EQ(error.code(), ErrorCode::kTimeout) << error.what();
        }
      }
    }
  });
}

TEST_P(PointToPointErrors, AbortFailsPendingOperationsOnEveryRank) {
  // Ranks 1 and 2 leave only once both have failed: one that left at once could beat rank 0's
  // abort to its partner, which would then rightly report that departure instead.
  std::latch both_failed(2);
  run_ranks(3, [&both_failed](ProcessGroup& group) {
    std::vector<float> data(1);
    if (group.rank() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      group.abort("test abort");
      EXPECT_EQ(error_of([&] { group.send(data, 1); }).code(), ErrorCode::kAborted);
      return;
    }
    // Ranks 1 and 2 wait on each other; rank 0's abort reaches them through the flood.
    group.send(data, 0);  // connects to rank 0 so the abort can reach us
    Error error = error_of([&] { group.recv(data, 3 - group.rank(), 7); });
    both_failed.arrive_and_wait();
    EXPECT_EQ(error.code(), ErrorCode::kAborted) << error.what();
    EXPECT_NE(std::string(error.what()).find("test abort"), std::string::npos) << error.what();
  });
}

// Sizes on both sides of every boundary of the shared-memory path (inline, single copy,
// chunks), all on one tag and in both directions at once: each arrives whole, in order.
TEST_P(PointToPoint, EverySizeArrivesWholeAndInOrderBothWays) {
  const std::vector<std::size_t> counts = {0,      1,     4095,    4096,    4097, 8192 + 3,
                                           60'000, 65536, 250'000, 1 << 20, 3};
  run_ranks(2, [&](ProcessGroup& group) {
    int other = 1 - group.rank();
    std::vector<std::vector<int32_t>> out, in;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      out.push_back(pattern_data<int32_t>(static_cast<int>(i), group.rank(), counts[i]));
      in.emplace_back(counts[i], -1);
    }
    std::vector<std::shared_ptr<Work>> works;
    for (std::size_t i = 0; i < counts.size(); ++i) works.push_back(group.isend(out[i], other, 3));
    for (std::size_t i = 0; i < counts.size(); ++i) works.push_back(group.irecv(in[i], other, 3));
    for (auto& work : works) work->wait();
    for (std::size_t i = 0; i < counts.size(); ++i) {
      EXPECT_EQ(in[i], pattern_data<int32_t>(static_cast<int>(i), other, counts[i]))
          << "message " << i;
    }
  });
}

// Far more than a ring holds, sent before the receiver posts anything: the sender queues, the
// receiver's progress makes room, nothing is lost or reordered.
TEST_P(PointToPoint, ABurstLargerThanTheRingIsDeliveredInOrder) {
  constexpr int kMessages = 3000;
  run_ranks(2, [](ProcessGroup& group) {
    if (group.rank() == 0) {
      std::vector<std::vector<int32_t>> data;
      for (int i = 0; i < kMessages; ++i) data.push_back(pattern_data<int32_t>(i, 0, 64 + i % 50));
      std::vector<std::shared_ptr<Work>> works;
      for (int i = 0; i < kMessages; ++i) works.push_back(group.isend(data[i], 1, 8));
      for (auto& work : works) work->wait();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      for (int i = 0; i < kMessages; ++i) {
        std::vector<int32_t> got(64 + i % 50);
        group.recv(got, 0, 8);
        ASSERT_EQ(got, pattern_data<int32_t>(i, 0, 64 + i % 50)) << "message " << i;
      }
    }
  });
}

// A receive from anyone takes messages of every size from several senders (a tag per round,
// small and large rounds alternating).
TEST_P(PointToPoint, AnySourceTakesLargeAndSmallMessagesFromEverySender) {
  constexpr int kRounds = 4;
  auto count_of = [](int round) -> std::size_t { return round % 2 ? 70'000 : 5; };
  run_ranks(4, [&](ProcessGroup& group) {
    if (group.rank() != 0) {
      for (int round = 0; round < kRounds; ++round) {
        group.send(pattern_data<int32_t>(round, group.rank(), count_of(round)), 0, 10 + round);
      }
      return;
    }
    for (int round = 0; round < kRounds; ++round) {
      std::vector<int> senders;
      for (int i = 0; i < 3; ++i) {
        std::vector<int32_t> buffer(count_of(round), -1);
        int sender = group.recv(buffer, kAnySource, 10 + round);
        EXPECT_EQ(buffer, pattern_data<int32_t>(round, sender, count_of(round)))
            << "round " << round;
        senders.push_back(sender);
      }
      std::sort(senders.begin(), senders.end());
      EXPECT_EQ(senders, (std::vector<int>{1, 2, 3})) << "round " << round;
    }
  });
}

// Two groups of the same ranks, each driven by its own thread, exchange messages of every
// kind at once: sends from both threads share one ring (and one queue, one offer table) per
// pair, and each group must get exactly its own messages, in order.
TEST_P(PointToPoint, TwoGroupsOnTwoThreadsShareTheRingsWithoutMixing) {
  const std::vector<std::size_t> counts = {1, 3000, 9000, 70'000, 5};
  run_ranks(2, [&](ProcessGroup& group) {
    auto twin = group.new_group({0, 1});
    ASSERT_NE(twin, nullptr);
    auto exchange = [&](ProcessGroup& g, int seed) {
      int other = 1 - g.rank();
      for (int repeat = 0; repeat < 20; ++repeat) {
        for (std::size_t i = 0; i < counts.size(); ++i) {
          auto mine =
              pattern_data<int32_t>(seed + repeat, g.rank() * 7 + static_cast<int>(i), counts[i]);
          std::vector<int32_t> theirs(counts[i], -1);
          auto sent = g.isend(mine, other, static_cast<int>(i));
          g.recv(theirs, other, static_cast<int>(i));
          sent->wait();
          ASSERT_EQ(theirs, pattern_data<int32_t>(seed + repeat, other * 7 + static_cast<int>(i),
                                                  counts[i]))
              << "seed " << seed << " repeat " << repeat << " message " << i;
        }
      }
    };
    std::thread second([&] { exchange(*twin, 1000); });
    exchange(group, 0);
    second.join();
  });
}

// Every path this build has: ofi where libfabric was found.
#ifdef WEFT_HAVE_OFI
#define WEFT_TEST_PATHS "tcp", "shm", "shm_copy_through", "ofi"
#else
#define WEFT_TEST_PATHS "tcp", "shm", "shm_copy_through"
#endif

INSTANTIATE_TEST_SUITE_P(Paths, PointToPoint, ::testing::Values(WEFT_TEST_PATHS),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(Paths, PointToPointErrors, ::testing::Values(WEFT_TEST_PATHS),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace weft
