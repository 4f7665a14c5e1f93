// Non-blocking point-to-point communication (torch.distributed's isend/irecv tutorial).
//
// Rank 0 adds 1 to its one-element tensor and starts sending it to rank 1 with isend; rank 1
// starts receiving with irecv. Both get a weft::Work back at once and may do other things
// meanwhile, but must neither modify the sent buffer nor read the received one until
// Work::wait() has returned. Any further ranks take no part and keep 0.0.
//
//   weftrun -n 2 ./p2p_nonblocking
//
// prints (in some order)
//   Rank 0 started sending
//   Rank 1 started receiving
//   Rank 0 has data 1.0
//   Rank 1 has data 1.0
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
    if (group->size() < 2) {
      std::fprintf(stderr, "p2p_nonblocking needs at least 2 ranks, got %d\n", group->size());
      return 2;
    }

    std::vector<float> tensor(1, 0.0f);
    std::shared_ptr<weft::Work> request;
    if (rank == 0) {
      tensor[0] += 1.0f;
      request = group->isend(tensor, /*dst=*/1);
      std::printf("Rank 0 started sending\n");
    } else if (rank == 1) {
      request = group->irecv(tensor, /*src=*/0);
      std::printf("Rank 1 started receiving\n");
    }
    std::fflush(stdout);

    // The buffer is in an undefined state until wait() returns (it rethrows any failure).
    if (request) request->wait();
    if (request && !request->is_success()) {
      std::fprintf(stderr, "Rank %d: FAILED: the request completed without success\n", rank);
      return 1;
    }
    if (rank == 1 && request->source_rank() != 0) {
      std::fprintf(stderr, "Rank 1: FAILED: the message came from rank %d, not 0\n",
                   request->source_rank());
      return 1;
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
      std::fprintf(stderr, "%s: FAILED to join the job: %s\n", "p2p_nonblocking", e.what());
    }
    return 1;
  }
}
