#include "hierarchical_checks.h"

#include <chrono>
#include <cstdint>
#include <numeric>
#include <thread>
#include <vector>

#include "support/typed_values.h"

namespace weft::testing {

namespace {

using Bytes = std::vector<uint8_t>;

// A distinct value for element i of what rank `from` sends rank `to` (exact in int32).
int32_t code(int from, int to, std::size_t i) {
  return static_cast<int32_t>(from * 10'000'000 + to * 100'000 + static_cast<int>(i % 100'000));
}

std::string at(const std::string& what, int rank, std::size_t i) {
  return what + " (rank " + std::to_string(rank) + ", element " + std::to_string(i) + ")";
}

ReduceOp op_of(ReduceOp::Kind kind) {
  return kind == ReduceOp::kPremulSum ? ReduceOp::premul_sum(2.0) : ReduceOp(kind);
}

// One even reduce_scatter of `count` elements per rank in `dtype` with `kind`.
std::string even_reduce_scatter(ProcessGroup& group, DType dtype, ReduceOp::Kind kind,
                                std::size_t count) {
  const int me = group.rank(), world = group.size();
  const std::size_t element = size_of(dtype);
  Bytes input(count * world * element), output(count * element, 0xEE);
  for (std::size_t j = 0; j < count * world; ++j) {
    store_value(dtype, input.data(), j, input_value(kind, dtype, 0, me, j, world));
  }
  const ReduceOp op = op_of(kind);
  group.reduce_scatter(ConstBufferView(input.data(), count * world, dtype),
                       BufferView(output.data(), count, dtype), op);
  for (std::size_t i = 0; i < count; ++i) {
    std::vector<double> values;
    for (int r = 0; r < world; ++r) {
      values.push_back(input_value(kind, dtype, 0, r, me * count + i, world));
    }
    if (load_value(dtype, output.data(), i) != reference_reduce(op, dtype, values)) {
      return at("reduce_scatter " + std::string(name_of(dtype)) + " " + std::string(name_of(kind)),
                me, i);
    }
  }
  return "";
}

}  // namespace

std::string check_reduce_scatter_every_dtype_and_op(ProcessGroup& group) {
  for (DType dtype : all_dtypes()) {
    for (ReduceOp::Kind kind : ops_for(dtype)) {
      for (std::size_t count : {std::size_t{0}, std::size_t{3}, std::size_t{1001}}) {
        std::string wrong = even_reduce_scatter(group, dtype, kind, count);
        if (!wrong.empty()) return wrong + " count " + std::to_string(count);
      }
    }
  }
  return "";
}

std::string check_uneven_reduce_scatter(ProcessGroup& group) {
  const int me = group.rank(), world = group.size();
  auto value = [](int rank, int block, std::size_t i) {
    return static_cast<int32_t>((rank + 1) * 3 + block * 7 + static_cast<int>(i % 1000));
  };
  for (int scale : {1, 1001, 150'001}) {
    std::vector<std::size_t> counts(world);
    for (int r = 0; r < world; ++r) counts[r] = static_cast<std::size_t>((r * 2 + 1) % 3 * scale);
    std::vector<std::vector<int32_t>> blocks(world);
    std::vector<ConstBufferView> inputs;
    for (int b = 0; b < world; ++b) {
      blocks[b].resize(counts[b]);
      for (std::size_t i = 0; i < counts[b]; ++i) blocks[b][i] = value(me, b, i);
      inputs.emplace_back(blocks[b]);
    }
    std::vector<int32_t> output(counts[me], -1);
    group.reduce_scatter(inputs, BufferView(output));
    for (std::size_t i = 0; i < counts[me]; ++i) {
      int32_t want = 0;
      for (int r = 0; r < world; ++r) want += value(r, me, i);
      if (output[i] != want) return at("uneven reduce_scatter", me, i);
    }
  }
  return "";
}

std::string check_all_to_all(ProcessGroup& group) {
  const int me = group.rank(), world = group.size();
  for (std::size_t block :
       {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{40'000}}) {
    std::vector<int32_t> input(block * world), output(block * world, -1);
    for (int to = 0; to < world; ++to) {
      for (std::size_t i = 0; i < block; ++i) input[to * block + i] = code(me, to, i);
    }
    group.all_to_all(ConstBufferView(input), BufferView(output));
    for (int from = 0; from < world; ++from) {
      for (std::size_t i = 0; i < block; ++i) {
        if (output[from * block + i] != code(from, me, i)) {
          return at("all_to_all block " + std::to_string(block), me, from * block + i);
        }
      }
    }
  }
  // Split sizes: some pieces empty, rank pairs of different sizes; up to 60000 elements (240
  // KB) per piece, enough for the leaders' and the hosts' large-message paths.
  for (std::size_t scale : {std::size_t{1}, std::size_t{20'000}}) {
    auto split = [&](int from, int to) {
      return static_cast<std::size_t>((from * 3 + to * 5) % 4) * scale;
    };
    std::vector<std::size_t> sends(world), receives(world);
    for (int r = 0; r < world; ++r) {
      sends[r] = split(me, r);
      receives[r] = split(r, me);
    }
    std::vector<int32_t> input(std::accumulate(sends.begin(), sends.end(), std::size_t{0}));
    std::vector<int32_t> output(std::accumulate(receives.begin(), receives.end(), std::size_t{0}),
                                -1);
    std::size_t position = 0;
    for (int to = 0; to < world; ++to) {
      for (std::size_t i = 0; i < sends[to]; ++i) input[position++] = code(me, to, i);
    }
    group.all_to_all(ConstBufferView(input), BufferView(output), sends, receives);
    position = 0;
    for (int from = 0; from < world; ++from) {
      for (std::size_t i = 0; i < receives[from]; ++i, ++position) {
        if (output[position] != code(from, me, i)) {
          return at("all_to_all with splits, scale " + std::to_string(scale), me, position);
        }
      }
    }
  }
  return "";
}

std::string check_gather_and_scatter(ProcessGroup& group) {
  const int me = group.rank(), world = group.size();
  for (std::size_t count :
       {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{70'001}}) {
    for (int root = 0; root < world; ++root) {
      std::vector<int32_t> mine(count);
      for (std::size_t i = 0; i < count; ++i) mine[i] = code(me, root, i);
      std::vector<std::vector<int32_t>> gathered(me == root ? world : 0,
                                                 std::vector<int32_t>(count, -1));
      std::vector<BufferView> outputs;
      for (auto& block : gathered) outputs.emplace_back(block);
      group.gather(ConstBufferView(mine), outputs, root);
      for (std::size_t r = 0; r < gathered.size(); ++r) {
        for (std::size_t i = 0; i < count; ++i) {
          if (gathered[r][i] != code(static_cast<int>(r), root, i)) {
            return at("gather count " + std::to_string(count) + " root " + std::to_string(root), me,
                      r * count + i);
          }
        }
      }

      std::vector<std::vector<int32_t>> dealt(me == root ? world : 0);
      std::vector<ConstBufferView> inputs;
      for (std::size_t r = 0; r < dealt.size(); ++r) {
        dealt[r].resize(count);
        for (std::size_t i = 0; i < count; ++i) dealt[r][i] = code(root, static_cast<int>(r), i);
        inputs.emplace_back(dealt[r]);
      }
      std::vector<int32_t> received(count, -1);
      group.scatter(inputs, BufferView(received), root);
      for (std::size_t i = 0; i < count; ++i) {
        if (received[i] != code(root, me, i)) {
          return at("scatter count " + std::to_string(count) + " root " + std::to_string(root), me,
                    i);
        }
      }
    }
  }
  return "";
}

std::string check_barrier(ProcessGroup& group) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kStagger = std::chrono::milliseconds(40);
  // The members leave the first barrier within a few milliseconds of each other (less than
  // kSlack); then each arrives `stagger` times its turn later, so no one may leave before the
  // last arrived.
  constexpr auto kSlack = std::chrono::milliseconds(20);
  const int me = group.rank(), world = group.size();
  for (bool reversed : {false, true}) {
    group.barrier();
    const auto start = Clock::now();
    const int turn = reversed ? world - 1 - me : me;
    std::this_thread::sleep_for(kStagger * turn);
    group.barrier();
    const auto waited = Clock::now() - start;
    if (waited < kStagger * (world - 1) - kSlack) {
      return "barrier: rank " + std::to_string(me) + " left after " +
             std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()) +
             " ms, before the last member arrived";
    }
  }
  return "";
}

}  // namespace weft::testing
