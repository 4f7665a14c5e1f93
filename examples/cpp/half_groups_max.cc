// Subgroups (Tasks 3 and 4 of a torch.distributed practice notebook).
//
//  1. all_reduce(SUM) of ones(4) in the subgroup of the odd ranks ([1, 3] with 4 ranks): its
//     members get the number of members; the other ranks take no part.
//  2. Two halves, ranks [0, n/2) and [n/2, n). The first half sums group_1_sum = [1, 1, 1, 1]
//     (int64), the second sums group_2_sum = [1.5] * 4 (float32), each within its own group.
//     Then all_reduce(MAX) over everyone of both tensors spreads each half's sum to the other
//     half, whose copy still holds the smaller starting value.
//  3. The same halves made in one call with split(color), and the same sum.
//
// new_group is collective over the parent group: every rank calls it, members or not, with
// the same list, and gets nullptr when it is not a member. Works for any world size >= 2.
//
//   weftrun -n 4 ./half_groups_max
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace {

template <typename T>
std::string show(const std::vector<T>& tensor) {
  std::string text = "[";
  for (std::size_t i = 0; i < tensor.size(); ++i) {
    char number[32];
    std::snprintf(number, sizeof number, "%s%.1f", i ? ", " : "", static_cast<double>(tensor[i]));
    text += number;
  }
  return text + "]";
}

template <typename T>
void expect(const std::vector<T>& tensor, T value, const std::string& what) {
  for (T v : tensor) {
    if (v != value) {
      throw std::runtime_error(what + " is " + show(tensor) + ", expected every element " +
                               std::to_string(value));
    }
  }
}

std::vector<int> ranks_in(int begin, int end, int step = 1) {
  std::vector<int> ranks;
  for (int r = begin; r < end; r += step) ranks.push_back(r);
  return ranks;
}

}  // namespace

int main() {
  int rank = -1;
  try {
    std::shared_ptr<weft::ProcessGroup> world = weft::init_process_group();
    rank = world->rank();
    const int size = world->size();
    if (size < 2) {
      std::fprintf(stderr, "half_groups_max needs at least 2 ranks, got %d\n", size);
      return 2;
    }

    // 1. The odd ranks.
    const std::vector<int> odd_ranks = ranks_in(1, size, 2);
    std::shared_ptr<weft::ProcessGroup> odd = world->new_group(odd_ranks);
    if (odd) {
      std::vector<float> tensor(4, 1.0f);
      odd->all_reduce(tensor);
      std::printf("Sub group all reduce: in rank %d, tensor = %s\n", rank, show(tensor).c_str());
      expect(tensor, static_cast<float>(odd_ranks.size()), "the odd ranks' sum");
    }
    world->barrier();

    // 2. Two halves, each summing its own tensor, then MAX across everyone.
    const int half = size / 2;
    std::vector<int64_t> group_1_sum(4, 1);
    std::vector<float> group_2_sum(4, 1.5f);
    std::shared_ptr<weft::ProcessGroup> group_1 = world->new_group(ranks_in(0, half));
    std::shared_ptr<weft::ProcessGroup> group_2 = world->new_group(ranks_in(half, size));
    if (group_1) {
      group_1->all_reduce(group_1_sum);
    } else {
      group_2->all_reduce(group_2_sum);
    }
    world->all_reduce(group_1_sum, weft::ReduceOp::kMax);
    world->all_reduce(group_2_sum, weft::ReduceOp::kMax);
    std::printf("In rank %d, group_1_sum=%s, group_2_sum=%s\n", rank, show(group_1_sum).c_str(),
                show(group_2_sum).c_str());
    expect(group_1_sum, static_cast<int64_t>(half), "group_1_sum");
    expect(group_2_sum, 1.5f * static_cast<float>(size - half), "group_2_sum");

    // 3. The same halves with split: ranks with the same color form a group.
    std::shared_ptr<weft::ProcessGroup> my_half = world->split(/*color=*/rank < half ? 0 : 1);
    std::vector<int64_t> members = {1};
    my_half->all_reduce(members);
    std::printf("Rank %d: split put me in a half of %lld ranks\n", rank,
                static_cast<long long>(members[0]));
    expect(members, static_cast<int64_t>(rank < half ? half : size - half), "split half size");

    std::fflush(stdout);
    return 0;
  } catch (const std::exception& e) {
    if (rank >= 0) {
      std::fprintf(stderr, "Rank %d: FAILED: %s\n", rank, e.what());
    } else {
      std::fprintf(stderr, "half_groups_max: FAILED to join the job: %s\n", e.what());
    }
    return 1;
  }
}
