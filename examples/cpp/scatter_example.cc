// Scatter a list from rank 0 (the "Scatter" cell of a torch.distributed practice notebook).
//
// Only rank 0 prepares the data: a list of world-size tensors, the i-th one [i, i]. scatter
// deals them out, list[r] to rank r, so each rank needs room for one piece only (where a
// broadcast would give every rank the whole list). The other ranks pass an empty list.
//
//   weftrun -n 4 ./scatter_example
// prints (in some order)
//   rank=0, output=[0.0, 0.0]
//   rank=1, output=[1.0, 1.0]  ...
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <vector>

#include "weft/weft.h"

int main() {
  int rank = -1;
  try {
    std::shared_ptr<weft::ProcessGroup> group = weft::init_process_group();
    rank = group->rank();
    const int size = group->size();

    std::vector<float> output(2, -1.0f);
    std::vector<std::vector<float>> scatter_list;  // the data, on rank 0 only
    std::vector<weft::ConstBufferView> inputs;     // views of it, as scatter takes them
    if (rank == 0) {
      for (int i = 0; i < size; ++i)
        scatter_list.push_back(std::vector<float>(2, static_cast<float>(i)));
      for (const auto& piece : scatter_list) inputs.push_back(piece);
    }
    group->scatter(inputs, output, /*root=*/0);

    std::printf("rank=%d, output=[%.1f, %.1f]\n", rank, output[0], output[1]);
    std::fflush(stdout);

    const float expected = static_cast<float>(rank);
    if (output[0] != expected || output[1] != expected) {
      std::fprintf(stderr, "Rank %d: FAILED: expected [%.1f, %.1f], got [%.1f, %.1f]\n", rank,
                   expected, expected, output[0], output[1]);
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    if (rank >= 0) {
      std::fprintf(stderr, "Rank %d: FAILED: %s\n", rank, e.what());
    } else {
      std::fprintf(stderr, "scatter_example: FAILED to join the job: %s\n", e.what());
    }
    return 1;
  }
}
