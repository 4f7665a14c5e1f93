// The collectives through the public API: every collective x dtype x op x world size against
// references computed here with plain loops, forced algorithms, async forms, subgroups,
// concurrent groups, bad arguments and mismatched calls.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "support/errors.h"
#include "support/thread_ranks.h"
#include "support/typed_values.h"

namespace weft {
namespace {

using testing::error_of;
using testing::input_value;
using testing::load_value;
using testing::reference_reduce;
using testing::run_ranks;
using testing::store_value;

using Bytes = std::vector<uint8_t>;

// A buffer of `count` elements of `dtype`, filled by fn(index).
template <typename Fn>
Bytes filled(DType dtype, std::size_t count, Fn fn) {
  Bytes bytes(count * size_of(dtype) + 1);  // +1: never a null data() for count 0
  for (std::size_t i = 0; i < count; ++i) store_value(dtype, bytes.data(), i, fn(i));
  return bytes;
}

BufferView view(Bytes& bytes, DType dtype, std::size_t count) {
  return BufferView(bytes.data(), count, dtype);
}

// Counts worth testing at world size p: 0, 1, p-1, p+1 and an odd larger one.
std::vector<std::size_t> counts_for(int p) {
  return {0, 1, std::size_t(p - 1), std::size_t(p + 1), 1023};
}

ReduceOp make_op(ReduceOp::Kind kind) {
  return kind == ReduceOp::kPremulSum ? ReduceOp::premul_sum(0.5) : ReduceOp(kind);
}

// Checks every element of a reduction result; reports the first wrong one.
void expect_reduced(ReduceOp op, DType dtype, const Bytes& got, std::size_t count, int world,
                    int seed, const std::string& what) {
  for (std::size_t i = 0; i < count; ++i) {
    std::vector<double> inputs;
    for (int r = 0; r < world; ++r)
      inputs.push_back(input_value(op.kind, dtype, seed, r, i, world));
    double want = reference_reduce(op, dtype, inputs);
    double have = load_value(dtype, got.data(), i);
    if (want != have) {
      ADD_FAILURE() << what << " " << name_of(dtype) << " " << name_of(op.kind) << " count "
                    << count << " index " << i << ": got " << have << " want " << want;
      return;
    }
  }
}

class Collectives : public ::testing::TestWithParam<int> {};

TEST_P(Collectives, AllReduceEveryDtypeOpAndAlgorithm) {
  int world = GetParam();
  run_ranks(world, [world](ProcessGroup& group) {
    for (std::string algorithm :
         {"", "ring", "recursive_doubling", "rabenseifner", "naive", "shm"}) {
      for (DType dtype : testing::all_dtypes()) {
        for (ReduceOp::Kind kind : testing::ops_for(dtype)) {
          for (std::size_t count : {std::size_t(1), std::size_t(world + 1), std::size_t(1023)}) {
            ReduceOp op = make_op(kind);
            int seed = static_cast<int>(count) + kind;
            Bytes data = filled(dtype, count, [&](std::size_t i) {
              return input_value(kind, dtype, seed, group.rank(), i, world);
            });
            CollectiveOptions options;
            options.algorithm = algorithm;
            group.all_reduce(view(data, dtype, count), op, options);
            expect_reduced(op, dtype, data, count, world, seed, "all_reduce[" + algorithm + "]");
          }
        }
      }
    }
  });
}

TEST_P(Collectives, AllReduceEdgeCountsAndSegments) {
  int world = GetParam();
  run_ranks(world, [world](ProcessGroup& group) {
    for (std::string algorithm : {"ring", "recursive_doubling", "rabenseifner", "naive", "shm"}) {
      for (std::size_t count : counts_for(world)) {
        for (std::size_t segment : {std::size_t(0), std::size_t(64)}) {
          Bytes data = filled(DType::kInt32, count, [&](std::size_t i) {
            return input_value(ReduceOp::kSum, DType::kInt32, 5, group.rank(), i, world);
          });
          CollectiveOptions options{algorithm, segment};
          group.all_reduce(view(data, DType::kInt32, count), ReduceOp::kSum, options);
          expect_reduced(ReduceOp::kSum, DType::kInt32, data, count, world, 5,
                         "all_reduce[" + algorithm + "]");
        }
      }
    }
  });
}

TEST_P(Collectives, BroadcastFromEveryRoot) {
  int world = GetParam();
  run_ranks(world, [world](ProcessGroup& group) {
    for (std::string algorithm : {"", "binomial", "scatter_allgather", "shm"}) {
      for (int root = 0; root < world; ++root) {
        for (std::size_t count : counts_for(world)) {
          Bytes data = filled(DType::kFloat32, count, [&](std::size_t i) {
            return group.rank() == root ? double(i % 97 + root) : -1.0;
          });
          group.broadcast(view(data, DType::kFloat32, count), root, {algorithm, 64});
          for (std::size_t i = 0; i < count; ++i) {
            ASSERT_EQ(load_value(DType::kFloat32, data.data(), i), double(i % 97 + root))
                << algorithm << " root " << root << " count " << count << " index " << i;
          }
        }
      }
    }
  });
}

TEST_P(Collectives, ReduceLandsOnRootAndLeavesOthersAlone) {
  int world = GetParam();
  run_ranks(world, [world](ProcessGroup& group) {
    for (DType dtype : {DType::kFloat32, DType::kInt64, DType::kFloat16, DType::kBool}) {
      for (ReduceOp::Kind kind : testing::ops_for(dtype)) {
        for (int root = 0; root < world; ++root) {
          std::size_t count = world + 1;
          ReduceOp op = make_op(kind);
          auto value = [&](std::size_t i) {
            return input_value(kind, dtype, root, group.rank(), i, world);
          };
          Bytes data = filled(dtype, count, value);
          Bytes before = data;
          group.reduce(view(data, dtype, count), root, op);
          if (group.rank() == root) {
            expect_reduced(op, dtype, data, count, world, root, "reduce");
          } else {
            ASSERT_EQ(data, before) << "reduce changed a non-root's buffer";
          }
        }
      }
    }
  });
}

TEST_P(Collectives, AllGatherIntoTensorListUnevenAndInPlace) {
  int world = GetParam();
  run_ranks(world, [world](ProcessGroup& group) {
    int me = group.rank();
    for (std::string algorithm : {"", "ring", "bruck", "shm"}) {
      for (std::size_t count : counts_for(world)) {
        std::vector<int32_t> mine(count);
        for (std::size_t i = 0; i < count; ++i) mine[i] = me * 1000 + int(i);
        std::vector<int32_t> all(count * world, -1);
        group.all_gather(ConstBufferView(mine), BufferView(all), {algorithm, 64});
        for (int r = 0; r < world; ++r) {
          for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(all[r * count + i], r * 1000 + int(i));
        }
        // In place: my input is my slice of the output.
        std::vector<int32_t> in_place(count * world, -1);
        std::copy(mine.begin(), mine.end(), in_place.begin() + me * count);
        group.all_gather(ConstBufferView(in_place.data() + me * count, count, DType::kInt32),
                         BufferView(in_place), {algorithm, 0});
        EXPECT_EQ(in_place, all);
        // An input inside the output but not at my slice (the output's first slice), which the
        // gathered blocks overwrite.
        std::vector<int32_t> inside(count * world, -1);
        std::copy(mine.begin(), mine.end(), inside.begin());
        group.all_gather(ConstBufferView(inside.data(), count, DType::kInt32), BufferView(inside),
                         {algorithm, 64});
        EXPECT_EQ(inside, all);
      }
    }
    // Uneven: rank r contributes r + 1 elements (rank 0 contributes none when world > 1).
    auto size_of_rank = [](int r) { return std::size_t(r == 0 ? 0 : r + 1); };
    std::vector<int64_t> mine(size_of_rank(me), me);
    std::vector<std::vector<int64_t>> outputs(world);
    std::vector<BufferView> views;
    for (int r = 0; r < world; ++r) {
      outputs[r].assign(size_of_rank(r), -1);
      views.emplace_back(outputs[r].data() ? outputs[r].data() : reinterpret_cast<int64_t*>(8),
                         outputs[r].size(), DType::kInt64);
    }
    group.all_gather(ConstBufferView(mine.data() ? mine.data() : reinterpret_cast<int64_t*>(8),
                                     mine.size(), DType::kInt64),
                     views);
    for (int r = 0; r < world; ++r) EXPECT_EQ(outputs[r], std::vector<int64_t>(size_of_rank(r), r));
  });
}

TEST_P(Collectives, GatherAndScatterEveryRoot) {
  int world = GetParam();
  run_ranks(world, [world](ProcessGroup& group) {
    int me = group.rank();
    for (int root = 0; root < world; ++root) {
      std::vector<double> mine(3, me + 0.5);
      std::vector<std::vector<double>> gathered(world, std::vector<double>(3, -1));
      std::vector<BufferView> outputs;
      if (me == root) {
        for (auto& slot : gathered) outputs.emplace_back(slot);
      }
      group.gather(ConstBufferView(mine), outputs, root);
      if (me == root) {
        for (int r = 0; r < world; ++r) EXPECT_EQ(gathered[r], std::vector<double>(3, r + 0.5));
      }
      std::vector<std::vector<double>> pieces(world);
      std::vector<ConstBufferView> inputs;
      if (me == root) {
        for (int r = 0; r < world; ++r) {
          pieces[r].assign(5, r * 10.0 + root);
          inputs.emplace_back(pieces[r]);
        }
      }
      std::vector<double> got(5, -1);
      group.scatter(inputs, BufferView(got), root);
      EXPECT_EQ(got, std::vector<double>(5, me * 10.0 + root));
    }
  });
}

TEST_P(Collectives, ReduceScatterTensorAndUnevenList) {
  int world = GetParam();
  run_ranks(world, [world](ProcessGroup& group) {
    int me = group.rank();
    for (std::string algorithm : {"", "ring", "recursive_halving", "shm"}) {
      for (DType dtype : testing::all_dtypes()) {
        for (ReduceOp::Kind kind : testing::ops_for(dtype)) {
          ReduceOp op = make_op(kind);
          std::size_t block = 3;
          Bytes input = filled(dtype, block * world, [&](std::size_t i) {
            return input_value(kind, dtype, 1, me, i, world);
          });
          Bytes output = filled(dtype, block, [](std::size_t) { return 0.0; });
          CollectiveOptions options;
          options.algorithm = algorithm;
          group.reduce_scatter(ConstBufferView(input.data(), block * world, dtype),
                               view(output, dtype, block), op, options);
          for (std::size_t i = 0; i < block; ++i) {
            std::vector<double> inputs;
            for (int r = 0; r < world; ++r) {
              inputs.push_back(input_value(kind, dtype, 1, r, me * block + i, world));
            }
            ASSERT_EQ(load_value(dtype, output.data(), i), reference_reduce(op, dtype, inputs))
                << "reduce_scatter[" << algorithm << "] " << name_of(dtype) << " " << name_of(kind)
                << " index " << i;
          }
        }
      }
    }
    // Uneven list: rank r's share has r elements; contribution from rank s is s*100 + i.
    std::vector<std::vector<int32_t>> contributions(world);
    std::vector<ConstBufferView> inputs;
    for (int r = 0; r < world; ++r) {
      for (int i = 0; i < r; ++i) contributions[r].push_back(me * 100 + i);
      inputs.emplace_back(
          contributions[r].data() ? contributions[r].data() : reinterpret_cast<int32_t*>(4),
          contributions[r].size(), DType::kInt32);
    }
    std::vector<int32_t> share(me, -1);
    group.reduce_scatter(inputs,
                         BufferView(share.data() ? share.data() : reinterpret_cast<int32_t*>(4),
                                    share.size(), DType::kInt32));
    for (int i = 0; i < me; ++i) EXPECT_EQ(share[i], 100 * world * (world - 1) / 2 + world * i);
  });
}

TEST_P(Collectives, AllToAllEqualSplitAndList) {
  int world = GetParam();
  run_ranks(world, [world](ProcessGroup& group) {
    int me = group.rank();
    std::vector<int32_t> input(2 * world), output(2 * world, -1);
    for (int r = 0; r < world; ++r) input[2 * r] = input[2 * r + 1] = me * 100 + r;
    group.all_to_all(ConstBufferView(input), BufferView(output));
    for (int r = 0; r < world; ++r) {
      EXPECT_EQ(output[2 * r], r * 100 + me);
      EXPECT_EQ(output[2 * r + 1], r * 100 + me);
    }
    // Splits: I send (r + me) % 3 elements to rank r; I receive (me + r) % 3 from rank r.
    std::vector<std::size_t> sends(world), recvs(world);
    for (int r = 0; r < world; ++r) sends[r] = recvs[r] = (r + me) % 3;
    std::vector<int32_t> packed, unpacked(std::accumulate(recvs.begin(), recvs.end(), 0), -1);
    for (int r = 0; r < world; ++r) {
      for (std::size_t i = 0; i < sends[r]; ++i) packed.push_back(me * 1000 + r * 10 + int(i));
    }
    packed.reserve(1);
    unpacked.reserve(1);
    group.all_to_all(ConstBufferView(packed.data(), packed.size(), DType::kInt32),
                     BufferView(unpacked.data(), unpacked.size(), DType::kInt32), sends, recvs);
    std::size_t at = 0;
    for (int r = 0; r < world; ++r) {
      for (std::size_t i = 0; i < recvs[r]; ++i)
        EXPECT_EQ(unpacked[at++], r * 1000 + me * 10 + int(i));
    }
  });
}

// A rank's own block is copied in pieces while the exchanges travel
// (CollectiveCall::copy_while_in_flight): a block of a few pieces and a ragged end.
TEST_P(Collectives, OwnBlocksLargerThanACopyPieceLandWhole) {
  int world = GetParam();
  run_ranks(world, [world](ProcessGroup& group) {
    const int me = group.rank();
    const std::size_t block = 150001;  // int32s: 600004 bytes, past one 512 KiB piece
    auto value = [](int from, int to, std::size_t i) {
      return from * 7919 + to * 31 + int(i % 9973);
    };
    std::vector<int32_t> mine(block);
    for (std::size_t i = 0; i < block; ++i) mine[i] = value(me, 0, i);
    std::vector<int32_t> all(block * world, -1);
    group.all_gather(ConstBufferView(mine), BufferView(all), {"ring", 0});
    for (int r = 0; r < world; ++r) {
      for (std::size_t i = 0; i < block; ++i) ASSERT_EQ(all[r * block + i], value(r, 0, i));
    }
    std::vector<int32_t> input(block * world), output(block * world, -1);
    for (int r = 0; r < world; ++r) {
      for (std::size_t i = 0; i < block; ++i) input[r * block + i] = value(me, r, i);
    }
    group.all_to_all(ConstBufferView(input), BufferView(output), {}, {}, {"pairwise", 0});
    for (int r = 0; r < world; ++r) {
      for (std::size_t i = 0; i < block; ++i) ASSERT_EQ(output[r * block + i], value(r, me, i));
    }
  });
}

TEST_P(Collectives, BarrierHoldsEveryoneUntilTheLastArrives) {
  int world = GetParam();
  auto arrived = std::make_shared<std::atomic<int>>(0);
  run_ranks(world, [world, arrived](ProcessGroup& group) {
    for (int round = 1; round <= 3; ++round) {
      if (group.rank() == round % world) std::this_thread::sleep_for(std::chrono::milliseconds(30));
      arrived->fetch_add(1);
      group.barrier();
      EXPECT_GE(arrived->load(), round * world);
      group.barrier();  // nobody starts the next round before everyone checked
    }
  });
}

TEST_P(Collectives, ScanAndExscan) {
  int world = GetParam();
  run_ranks(world, [](ProcessGroup& group) {
    int me = group.rank();
    std::vector<int64_t> input{me + 1, 2 * (me + 1)}, output(2, -7);
    group.scan(ConstBufferView(input), BufferView(output));
    EXPECT_EQ(output[0], (me + 1) * (me + 2) / 2);
    EXPECT_EQ(output[1], (me + 1) * (me + 2));
    std::vector<int64_t> before(2, -7);
    group.exscan(ConstBufferView(input), BufferView(before), ReduceOp::kMax);
    if (me > 0)
      EXPECT_EQ(before[0], me);
    else
      EXPECT_EQ(before[0], -7);  // rank 0's exscan output is left untouched
  });
}

TEST_P(Collectives, AsyncOperationsRunInIssueOrder) {
  int world = GetParam();
  run_ranks(world, [world](ProcessGroup& group) {
    std::vector<std::vector<int32_t>> buffers(8, std::vector<int32_t>(4099));
    std::vector<std::shared_ptr<Work>> works;
    for (std::size_t k = 0; k < buffers.size(); ++k) {
      std::fill(buffers[k].begin(), buffers[k].end(), int(k) + group.rank());
      works.push_back(k % 2 ? group.iall_reduce(buffers[k])
                            : group.ibroadcast(BufferView(buffers[k]), int(k) % world));
    }
    group.barrier();  // a synchronous call queues behind the asynchronous ones
    for (auto& work : works) work->wait();
    for (std::size_t k = 0; k < buffers.size(); ++k) {
      int32_t want = k % 2 ? int32_t(world * k + world * (world - 1) / 2) : int32_t(k + k % world);
      EXPECT_EQ(buffers[k][4098], want) << "operation " << k;
      EXPECT_TRUE(works[k]->is_success());
    }
  });
}

// Threads of one rank issuing the same collectives at once on one group: they run one at a time
// and pair up across ranks by the order each rank ran them, which for calls all alike gives every
// call the right sum, never a mixed window or a hang. With `one_async`, thread 0 issues the
// asynchronous form (its calls then mostly run on the group's worker). With `caller_too`, the
// calling thread issues them as well, beside the threads it started.
void all_reduce_from_threads_at_once(ProcessGroup& group, int world, int threads, int calls,
                                     bool one_async, bool caller_too = false) {
  const int64_t want = int64_t{world} * (world + 1) / 2;
  std::atomic<int> wrong{0};
  std::vector<std::string> failures(threads + 1);
  auto issue = [&](int t) {
    std::vector<int64_t> values(5);
    try {
      for (int i = 0; i < calls; ++i) {
        std::fill(values.begin(), values.end(), group.rank() + 1);
        if (one_async && t == 0) {
          group.iall_reduce(values)->wait();
        } else {
          group.all_reduce(values);
        }
        if (values[0] != want || values[4] != want) wrong.fetch_add(1);
      }
    } catch (const std::exception& e) {
      failures[t] = e.what();
    }
  };
  std::vector<std::thread> issuers;
  for (int t = 0; t < threads; ++t) issuers.emplace_back(issue, t);
  if (caller_too) issue(threads);
  for (std::thread& issuer : issuers) issuer.join();
  EXPECT_EQ(wrong.load(), 0) << "on rank " << group.rank();
  for (int t = 0; t <= threads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

TEST_P(Collectives, CallsFromSeveralThreadsAtOnceRunOneAtATime) {
  int world = GetParam();
  run_ranks(world, [world](ProcessGroup& group) {
    // The rank's own thread issues first, alone (it claims the group without an exchange,
    // core/runner_claim.h), then goes on while two more threads start issuing.
    all_reduce_from_threads_at_once(group, world, /*threads=*/0, /*calls=*/50,
                                    /*one_async=*/false, /*caller_too=*/true);
    all_reduce_from_threads_at_once(group, world, /*threads=*/2, /*calls=*/200,
                                    /*one_async=*/false, /*caller_too=*/true);
    all_reduce_from_threads_at_once(group, world, /*threads=*/3, /*calls=*/200, /*one_async=*/true);
    all_reduce_from_threads_at_once(group, world, /*threads=*/2, /*calls=*/200,
                                    /*one_async=*/false);
  });
}

// Over TCP a call's messages carry its sequence number: calls from several threads must take
// their numbers in the order they run, or each rank waits for another's.
TEST(CollectivesOverTcp, CallsFromSeveralThreadsAtOnceRunOneAtATime) {
  setenv("WEFT_TRANSPORT", "tcp", 1);
  run_ranks(3, [](ProcessGroup& group) {
    all_reduce_from_threads_at_once(group, 3, /*threads=*/2, /*calls=*/1000, /*one_async=*/false);
  });
  unsetenv("WEFT_TRANSPORT");
}

// Out of place: the result lands in the output, the input is left as it was, and the in-place
// and out-of-place forms agree (both against the plain-loop reference).
TEST_P(Collectives, AllReduceOutOfPlaceLeavesTheInputAlone) {
  int world = GetParam();
  run_ranks(world, [world](ProcessGroup& group) {
    for (std::string algorithm : {"", "ring", "recursive_doubling", "shm"}) {
      for (DType dtype : testing::all_dtypes()) {
        for (ReduceOp::Kind kind : testing::ops_for(dtype)) {
          for (std::size_t count : counts_for(world)) {
            ReduceOp op = make_op(kind);
            int seed = static_cast<int>(count) + kind + 3;
            Bytes input = filled(dtype, count, [&](std::size_t i) {
              return input_value(kind, dtype, seed, group.rank(), i, world);
            });
            const Bytes before = input;
            Bytes output = filled(dtype, count, [](std::size_t) { return 1.0; });
            CollectiveOptions options;
            options.algorithm = algorithm;
            ConstBufferView in(input.data(), count, dtype);
            if (kind == ReduceOp::kMax) {  // the asynchronous form too
              group.iall_reduce(in, view(output, dtype, count), op, options)->wait();
            } else {
              group.all_reduce(in, view(output, dtype, count), op, options);
            }
            expect_reduced(op, dtype, output, count, world, seed,
                           "out-of-place all_reduce[" + algorithm + "]");
            ASSERT_EQ(input, before) << "all_reduce changed its input";
          }
        }
      }
    }
  });
}

TEST_P(Collectives, BroadcastOutOfPlaceFromEveryRoot) {
  int world = GetParam();
  run_ranks(world, [world](ProcessGroup& group) {
    for (std::string algorithm : {"", "binomial", "scatter_allgather", "shm"}) {
      for (int root = 0; root < world; ++root) {
        for (std::size_t count : counts_for(world)) {
          const bool is_root = group.rank() == root;
          // Non-roots pass an empty input: only the root's is read.
          Bytes input = filled(DType::kInt32, is_root ? count : 0,
                               [&](std::size_t i) { return double(i % 89 + root); });
          const Bytes before = input;
          Bytes output = filled(DType::kInt32, count, [](std::size_t) { return -1.0; });
          ConstBufferView in(input.data(), is_root ? count : 0, DType::kInt32);
          group.broadcast(in, view(output, DType::kInt32, count), root, {algorithm, 64});
          for (std::size_t i = 0; i < count; ++i) {
            ASSERT_EQ(load_value(DType::kInt32, output.data(), i), double(i % 89 + root))
                << algorithm << " root " << root << " count " << count << " index " << i;
          }
          ASSERT_EQ(input, before) << "broadcast changed the root's input";
        }
      }
    }
  });
}

TEST_P(Collectives, ReduceOutOfPlaceWithAndWithoutScratchOutputs) {
  int world = GetParam();
  run_ranks(world, [world](ProcessGroup& group) {
    for (DType dtype : {DType::kFloat32, DType::kInt64, DType::kBFloat16}) {
      for (ReduceOp::Kind kind : testing::ops_for(dtype)) {
        for (int root = 0; root < world; ++root) {
          for (bool scratch : {false, true}) {
            std::size_t count = world + 2;
            ReduceOp op = make_op(kind);
            Bytes input = filled(dtype, count, [&](std::size_t i) {
              return input_value(kind, dtype, root, group.rank(), i, world);
            });
            const Bytes before = input;
            const bool is_root = group.rank() == root;
            // Non-roots give no output, or one of the input's size to use as scratch.
            std::size_t out_count = is_root || scratch ? count : 0;
            Bytes output = filled(dtype, out_count, [](std::size_t) { return 1.0; });
            group.reduce(ConstBufferView(input.data(), count, dtype),
                         view(output, dtype, out_count), root, op);
            if (is_root)
              expect_reduced(op, dtype, output, count, world, root, "out-of-place reduce");
            ASSERT_EQ(input, before) << "reduce changed its input";
          }
        }
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, Collectives, ::testing::Values(1, 2, 3, 4, 5, 7, 8),
                         [](const auto& info) { return "p" + std::to_string(info.param); });

TEST(Subgroups, SeedThreeGroupsAndHalves) {
  run_ranks(4, [](ProcessGroup& group) {
    int me = group.rank();
    // all_reduce in subgroup [1, 3]: only they take part.
    auto odd = group.new_group({1, 3});
    std::vector<float> value{float(me)};
    if (odd) {
      EXPECT_TRUE(me == 1 || me == 3);
      odd->all_reduce(value);
      EXPECT_EQ(value[0], 4.0f);
      EXPECT_EQ(odd->size(), 2);
      EXPECT_EQ(odd->rank(), me == 1 ? 0 : 1);
    } else {
      EXPECT_TRUE(me == 0 || me == 2);
    }
    // Two half groups sum, then MAX across everyone.
    auto low = group.new_group({0, 1});
    auto high = group.new_group({2, 3});
    auto& half = me < 2 ? low : high;
    ASSERT_TRUE(half);
    std::vector<int32_t> sum{me};
    half->all_reduce(sum);
    group.all_reduce(sum, ReduceOp::kMax);
    EXPECT_EQ(sum[0], 5);
  });
}

TEST(Subgroups, ConcurrentGroupsNeverMix) {
  run_ranks(3, [](ProcessGroup& group) {
    auto a = group.new_group({0, 1, 2});
    auto b = group.new_group({0, 1, 2});
    std::vector<std::shared_ptr<Work>> works;
    std::vector<std::vector<int64_t>> in_a(10, std::vector<int64_t>(1000)), in_b = in_a;
    for (int k = 0; k < 10; ++k) {
      std::fill(in_a[k].begin(), in_a[k].end(), 1);
      std::fill(in_b[k].begin(), in_b[k].end(), 1000);
      works.push_back(a->iall_reduce(in_a[k]));
      works.push_back(b->iall_reduce(in_b[k]));
    }
    for (auto& work : works) work->wait();
    for (int k = 0; k < 10; ++k) {
      EXPECT_EQ(in_a[k][999], 3);
      EXPECT_EQ(in_b[k][999], 3000);
    }
  });
}

TEST(Subgroups, SplitByColorOrderedByKey) {
  run_ranks(5, [](ProcessGroup& group) {
    int me = group.rank();
    int color = me == 4 ? -1 : me % 2;
    auto part = group.split(color, /*key=*/-me);  // reverse order inside each color
    if (color < 0) {
      EXPECT_FALSE(part);
      return;
    }
    ASSERT_TRUE(part);
    std::vector<int32_t> members(part->size());
    std::vector<int32_t> mine{me};
    part->all_gather(ConstBufferView(mine), BufferView(members));
    std::vector<int32_t> want =
        color == 0 ? std::vector<int32_t>{2, 0} : std::vector<int32_t>{3, 1};
    EXPECT_EQ(members, want);
  });
}

TEST(CollectiveErrors, BadArgumentsAreRefusedBeforeAnythingIsSent) {
  run_ranks(2, [](ProcessGroup& group) {
    std::vector<float> data(4), small(3);
    std::vector<int32_t> ints(4);
    EXPECT_EQ(error_of([&] { group.broadcast(data, 2); }).code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(error_of([&] { group.all_reduce(data, ReduceOp::kBxor); }).code(),
              ErrorCode::kInvalidArgument);
    EXPECT_EQ(error_of([&] { group.all_gather(ConstBufferView(data), BufferView(small)); }).code(),
              ErrorCode::kInvalidArgument);
    EXPECT_EQ(error_of([&] { group.all_gather(ConstBufferView(data), BufferView(ints)); }).code(),
              ErrorCode::kInvalidArgument);
    EXPECT_EQ(error_of([&] {
                group.all_reduce(data, ReduceOp::kSum, CollectiveOptions{"no_such_algorithm"});
              }).code(),
              ErrorCode::kInvalidArgument);
    // Split sizes whose sum wraps around to the buffer's count.
    std::size_t half = (std::numeric_limits<std::size_t>::max() / 2) + 1;
    std::vector<std::size_t> wrapping{half + 2, half + 2};
    std::vector<std::size_t> even{2, 2};
    std::vector<float> received(4);
    Error wrapped = error_of(
        [&] { group.all_to_all(ConstBufferView(data), BufferView(received), wrapping, even); });
    EXPECT_EQ(wrapped.code(), ErrorCode::kInvalidArgument) << wrapped.what();
    Error message = error_of([&] { group.reduce(data, 7); });
    EXPECT_NE(std::string(message.what()).find("root"), std::string::npos) << message.what();
    // Nothing was sent: the group still works.
    std::vector<float> one{1.0f};
    group.all_reduce(one);
    EXPECT_EQ(one[0], 2.0f);
  });
}

TEST(CollectiveErrors, OutOfPlaceBuffersThatDoNotMatchAreRefused) {
  run_ranks(2, [](ProcessGroup& group) {
    std::vector<float> input(8, 1.0f), output(8), shorter(7);
    std::vector<int32_t> ints(8);
    auto refused = [&](const std::function<void()>& call, const char* words) {
      Error error = error_of(call);
      EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << error.what();
      EXPECT_NE(std::string(error.what()).find(words), std::string::npos) << error.what();
    };
    refused([&] { group.all_reduce(ConstBufferView(input), BufferView(shorter)); }, "elements");
    refused([&] { group.all_reduce(ConstBufferView(input), BufferView(ints)); }, "int32");
    // Half of the input is the output's first half.
    ConstBufferView head(input.data(), 6, DType::kFloat32);
    BufferView tail(input.data() + 2, 6, DType::kFloat32);
    refused([&] { group.all_reduce(head, tail); }, "overlap");
    if (group.rank() == 0) {  // the input is read, and checked, on the root only
      refused([&] { group.broadcast(ConstBufferView(input), BufferView(shorter), 0); }, "elements");
    } else {
      refused([&] { group.reduce(ConstBufferView(input), BufferView(shorter), 1); }, "elements");
    }
    // Nothing was sent: the group still works, in place and out of place alike.
    group.all_reduce(ConstBufferView(input), BufferView(output));
    EXPECT_EQ(output[7], 2.0f);
    EXPECT_EQ(input[7], 1.0f);
  });
}

TEST(Timeouts, ACallsOwnTimeoutBoundsItsWaits) {
  testing::ThreadRanksOptions options;
  options.timeout = std::chrono::seconds(30);
  run_ranks(
      2,
      [](ProcessGroup& group) {
        EXPECT_EQ(group.timeout(), std::chrono::seconds(30));
        std::vector<float> data(4, 1.0f);
        if (group.rank() == 0) {
          CollectiveOptions bounded;
          bounded.timeout = std::chrono::milliseconds(200);
          auto start = std::chrono::steady_clock::now();
          Error error = error_of([&] { group.all_reduce(data, ReduceOp::kSum, bounded); });
          auto waited = std::chrono::steady_clock::now() - start;
          EXPECT_EQ(error.code(), ErrorCode::kTimeout) << error.what();
          EXPECT_GE(waited, std::chrono::milliseconds(150));
          EXPECT_LT(waited, std::chrono::seconds(10)) << "the group's 30 s, not the call's 200 ms";
        }
        // Rank 1 never joins that all_reduce; its next collective hears that the group failed.
        std::this_thread::sleep_for(std::chrono::milliseconds(400));
        if (group.rank() == 1) {
          EXPECT_NE(error_of([&] { group.barrier(); }).code(), ErrorCode::kInternal);
        }
      },
      options);
}

TEST(Timeouts, NewGroupAndSplitTakeATimeoutOfTheirOwn) {
  testing::ThreadRanksOptions options;
  options.timeout = std::chrono::seconds(30);
  run_ranks(
      3,
      [](ProcessGroup& group) {
        auto same = group.new_group({0, 1, 2});
        EXPECT_EQ(same->timeout(), std::chrono::seconds(30)) << "a child inherits by default";
        auto halves = group.split(group.rank() % 2, 0, std::chrono::milliseconds(1500));
        EXPECT_EQ(halves->timeout(), std::chrono::milliseconds(1500));
        auto pair = group.new_group({0, 1}, std::chrono::milliseconds(200));
        if (!pair) return;
        EXPECT_EQ(pair->timeout(), std::chrono::milliseconds(200));
        std::vector<float> data(4, 1.0f);
        if (pair->rank() == 0) {
          auto start = std::chrono::steady_clock::now();
          Error error = error_of([&] { pair->all_reduce(data); });
          EXPECT_EQ(error.code(), ErrorCode::kTimeout) << error.what();
          EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(400));
      },
      options);
}

TEST(CollectiveErrors, MismatchedCallsFailOnEveryRankSayingWhatEachCalled) {
  run_ranks(3, [](ProcessGroup& group) {
    std::vector<float> data(8, 1.0f);
    Error error = error_of([&] {
      if (group.rank() == 1)
        group.broadcast(data, 0);
      else
        group.all_reduce(data);
    });
    EXPECT_TRUE(error.code() == ErrorCode::kMismatch || error.code() == ErrorCode::kAborted)
        << error.what();
    std::string text = error.what();
    EXPECT_NE(text.find("broadcast"), std::string::npos) << text;
    EXPECT_NE(text.find("all_reduce"), std::string::npos) << text;
    // The group's collectives stay failed, clearly.
    EXPECT_NE(error_of([&] { group.barrier(); }).code(), ErrorCode::kInternal);
  });
}

TEST(CollectiveErrors, CountMismatchIsCaughtNotWrittenPastTheBuffer) {
  run_ranks(2, [](ProcessGroup& group) {
    std::vector<int32_t> data(group.rank() == 0 ? 16 : 8, 1);
    std::vector<int32_t> guard = data;
    Error error = error_of([&] { group.all_reduce(data, ReduceOp::kSum, {"ring"}); });
    std::string text = error.what();
    EXPECT_NE(text.find("count=16"), std::string::npos) << text;
    EXPECT_NE(text.find("count=8"), std::string::npos) << text;
  });
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

TEST(CollectiveErrors, AWaitThatTimesOutReleasesTheBufferAndFailsTheGroup) {
  testing::run_ranks(2, [](ProcessGroup& group) {
    std::vector<float> data(16, 1.0f);
    if (group.rank() == 0) {
      auto work = group.iall_reduce(data);
      Error error = testing::error_of([&] { work->wait(std::chrono::milliseconds(100)); });
      EXPECT_EQ(error.code(), ErrorCode::kTimeout);
      EXPECT_TRUE(work->is_completed());  // the collective has let go of `data`
      EXPECT_FALSE(work->is_success());
    }
    // Rank 1 never joins that all_reduce; its next collective hears the group failed.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (group.rank() == 1) {
      Error error = testing::error_of([&] { group.barrier(); });
      EXPECT_NE(error.code(), ErrorCode::kInternal) << error.what();
    }
  });
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

TEST(Subgroups, AGroupOfAGroup) {
  testing::run_ranks(5, [](ProcessGroup& group) {
    auto upper = group.new_group({1, 2, 3, 4});  // group ranks 0..3 = world ranks 1..4
    if (!upper) {
      EXPECT_EQ(group.rank(), 0);
      return;
    }
    auto inner = upper->new_group({1, 3});  // world ranks 2 and 4
    std::vector<int32_t> value{group.rank()};
    if (inner) {
      EXPECT_TRUE(group.rank() == 2 || group.rank() == 4);
      inner->all_reduce(value);
      EXPECT_EQ(value[0], 6);
      std::vector<int32_t> from_peer(1);
      int peer = 1 - inner->rank();
      auto receive = inner->irecv(from_peer, peer);
      inner->send(value, peer);
      receive->wait();
      EXPECT_EQ(from_peer[0], 6);
    } else {
      EXPECT_TRUE(group.rank() == 1 || group.rank() == 3);
    }
    upper->barrier();
  });
}

}  // namespace
}  // namespace weft
