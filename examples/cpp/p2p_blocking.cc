// Blocking point-to-point communication (torch.distributed's send/recv tutorial).
//
// Every rank starts with a one-element tensor holding 0.0. Rank 0 adds 1 and sends it to
// rank 1 with a blocking send; rank 1 receives it with a blocking recv. Any further ranks
// take no part and keep 0.0.
//
//   weftrun -n 2 ./p2p_blocking
//
// prints (in some order)
//   Rank 0 has data 1.0
//   Rank 1 has data 1.0
// and exits non-zero when a rank does not hold what it should.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#include "weft/weft.h"

int main() {
  int rank = -1;
  try {
    std::shared_ptr<weft::ProcessGroup> group = weft::init_process_group();
    rank = group->rank();
    if (group->size() < 2) {
      std::fprintf(stderr, "p2p_blocking needs at least 2 ranks, got %d\n", group->size());
      return 2;
    }

    std::vector<float> tensor(1, 0.0f);
    if (rank == 0) {
      tensor[0] += 1.0f;
      group->send(tensor, /*dst=*/1);  // returns once the data is on its way
    } else if (rank == 1) {
      group->recv(tensor, /*src=*/0);  // returns once the data has arrived
    }
    std::printf("Rank %d has data %.1f\n", rank, tensor[0]);
    std::fflush(stdout);

    const float expected = rank <= 1 ? 1.0f : 0.0f;
    if (tensor[0] != expected) {
      std::fprintf(stderr, "Rank %d: FAILED: expected %.1f, got %.1f\n", rank, expected, tensor[0]);
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    if (rank >= 0) {
      std::fprintf(stderr, "Rank %d: FAILED: %s\n", rank, e.what());
    } else {
      std::fprintf(stderr, "%s: FAILED to join the job: %s\n", "p2p_blocking", e.what());
    }
    return 1;
  }
}
