// Broadcast from two different sources (the "Broadcast" cell of a torch.distributed practice
// notebook): rank 0 owns tensor_1 = [1, 2, 3], rank 1 owns tensor_2 = [4, 5]; every other
// rank starts with zeros of the same sizes. broadcast(tensor_1, 0) then broadcast(tensor_2, 1)
// leave every rank with both. A receiving rank must have allocated a buffer of the same size;
// broadcast writes into it in place.
//
//   weftrun -n 3 ./broadcast_two_sources
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace {

std::string show(const std::vector<float>& tensor) {
  std::string text = "[";
  for (std::size_t i = 0; i < tensor.size(); ++i) {
    char number[32];
    std::snprintf(number, sizeof number, "%s%.1f", i ? ", " : "", tensor[i]);
    text += number;
  }
  return text + "]";
}

}  // namespace

int main() {
  int rank = -1;
  try {
    std::shared_ptr<weft::ProcessGroup> group = weft::init_process_group();
    rank = group->rank();
    if (group->size() < 2) {
      std::fprintf(stderr, "broadcast_two_sources needs at least 2 ranks, got %d\n", group->size());
      return 2;
    }

    const std::vector<float> owned_by_0 = {1.0f, 2.0f, 3.0f};
    const std::vector<float> owned_by_1 = {4.0f, 5.0f};
    std::vector<float> tensor_1(3, 0.0f), tensor_2(2, 0.0f);
    if (rank == 0) tensor_1 = owned_by_0;
    if (rank == 1) tensor_2 = owned_by_1;
    std::printf("Before: rank=%d, tensor_1=%s, tensor_2=%s\n", rank, show(tensor_1).c_str(),
                show(tensor_2).c_str());

    group->broadcast(tensor_1, /*root=*/0);
    group->broadcast(tensor_2, /*root=*/1);

    std::printf("After:  rank=%d, tensor_1=%s, tensor_2=%s\n", rank, show(tensor_1).c_str(),
                show(tensor_2).c_str());
    std::fflush(stdout);

    if (tensor_1 != owned_by_0 || tensor_2 != owned_by_1) {
      std::fprintf(stderr, "Rank %d: FAILED: expected tensor_1=%s, tensor_2=%s\n", rank,
                   show(owned_by_0).c_str(), show(owned_by_1).c_str());
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    if (rank >= 0) {
      std::fprintf(stderr, "Rank %d: FAILED: %s\n", rank, e.what());
    } else {
      std::fprintf(stderr, "broadcast_two_sources: FAILED to join the job: %s\n", e.what());
    }
    return 1;
  }
}
