// One rank of the scale test: a correctness sweep of every collective at whatever world size
// weftrun starts (32 and 64 ranks on a 2-core machine in tests/scale/CMakeLists.txt), checked
// against plain loops. Integers, so that every reduction order gives the same answer. Exits 0
// when every result is right; rank 0 prints the world size and the time it took.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace {

struct Sweep {
  std::shared_ptr<weft::ProcessGroup> group;
  int me = 0;
  int world = 1;
  int wrong = 0;

  // Rank r's element i: small enough that sums over 64 ranks stay exact in int32.
  static int32_t value(int rank, std::size_t i) {
    return static_cast<int32_t>((rank + 1) * 7 + static_cast<int>(i % 97));
  }
  int32_t sum_over_ranks(std::size_t i) const {
    int32_t total = 0;
    for (int r = 0; r < world; ++r) total += value(r, i);
    return total;
  }
  void check(bool right, const std::string& what) {
    if (right) return;
    if (wrong++ < 5) std::fprintf(stderr, "rank %d: wrong %s\n", me, what.c_str());
  }

  void all_reduce(std::size_t count) {
    std::vector<int32_t> data(count);
    for (std::size_t i = 0; i < count; ++i) data[i] = value(me, i);
    group->all_reduce(data);
    for (std::size_t i = 0; i < count; ++i) {
      check(data[i] == sum_over_ranks(i), "all_reduce of " + std::to_string(count));
    }
  }

  void broadcast(std::size_t count, int root) {
    std::vector<int32_t> data(count, -1);
    if (me == root) {
      for (std::size_t i = 0; i < count; ++i) data[i] = value(root, i);
    }
    group->broadcast(data, root);
    for (std::size_t i = 0; i < count; ++i) {
      check(data[i] == value(root, i), "broadcast from " + std::to_string(root));
    }
  }

  void all_gather(std::size_t count) {
    std::vector<int32_t> mine(count), all(count * static_cast<std::size_t>(world), -1);
    for (std::size_t i = 0; i < count; ++i) mine[i] = value(me, i);
    group->all_gather(weft::ConstBufferView(mine), weft::BufferView(all));
    for (int r = 0; r < world; ++r) {
      for (std::size_t i = 0; i < count; ++i) {
        check(all[r * count + i] == value(r, i), "all_gather of " + std::to_string(count));
      }
    }
  }

  // Block b of rank r's input: value(r, b * count + i).
  void reduce_scatter(std::size_t count) {
    std::vector<int32_t> input(count * static_cast<std::size_t>(world)), output(count, -1);
    for (std::size_t i = 0; i < input.size(); ++i) input[i] = value(me, i);
    group->reduce_scatter(weft::ConstBufferView(input), weft::BufferView(output));
    for (std::size_t i = 0; i < count; ++i) {
      check(output[i] == sum_over_ranks(static_cast<std::size_t>(me) * count + i),
            "reduce_scatter of " + std::to_string(count));
    }
  }

  // Rank r sends value(r, d * count + i) to rank d.
  void all_to_all(std::size_t count) {
    std::vector<int32_t> input(count * static_cast<std::size_t>(world));
    std::vector<int32_t> output(input.size(), -1);
    for (std::size_t i = 0; i < input.size(); ++i) input[i] = value(me, i);
    group->all_to_all(weft::ConstBufferView(input), weft::BufferView(output));
    for (int r = 0; r < world; ++r) {
      for (std::size_t i = 0; i < count; ++i) {
        check(output[r * count + i] == value(r, static_cast<std::size_t>(me) * count + i),
              "all_to_all of " + std::to_string(count));
      }
    }
  }

  // The odd ranks form a group of their own; its all_reduce sums over them only.
  void subgroup() {
    std::vector<int> odd;
    for (int r = 1; r < world; r += 2) odd.push_back(r);
    auto sub = group->new_group(odd);
    if (!sub) return;
    std::vector<int32_t> data(1000);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = value(me, i);
    sub->all_reduce(data);
    for (std::size_t i = 0; i < data.size(); ++i) {
      int32_t total = 0;
      for (int r : odd) total += value(r, i);
      check(data[i] == total, "all_reduce of the odd ranks' group");
    }
  }
};

}  // namespace

// `--large`: a count of 6 MB more, whose messages across hosts are split over several
// connections when WEFT_SOCKET_NSTREAMS asks for them.
int main(int argc, char** argv) {
  const bool large = argc > 1 && std::string(argv[1]) == "--large";
  auto started = std::chrono::steady_clock::now();
  Sweep sweep;
  sweep.group = weft::init_process_group();
  sweep.me = sweep.group->rank();
  sweep.world = sweep.group->size();
  const auto uneven = static_cast<std::size_t>(3 * sweep.world + 1);
  std::vector<std::size_t> counts = {0, 1, uneven, 20'011};
  if (large) counts.push_back(1'500'007);
  for (std::size_t count : counts) {
    sweep.all_reduce(count);
    sweep.broadcast(count, 0);
    sweep.broadcast(count, sweep.world - 1);
    sweep.all_gather(count);
    sweep.reduce_scatter(count);
    sweep.all_to_all(count);
  }
  sweep.subgroup();
  sweep.group->barrier();
  if (sweep.me == 0) {
    auto seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf("scale sweep: %d ranks, %s in %.1f s\n", sweep.world,
                sweep.wrong ? "WRONG results" : "every result right", seconds);
  }
  return sweep.wrong ? 1 : 0;
}
