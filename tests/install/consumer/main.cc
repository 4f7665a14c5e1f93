// Uses an installed weft through its public headers only: a one-rank group rendezvousing on
// an in-memory store (InitOptions.store) that sends a message to itself.
// Prints "weft consumer OK" and exits 0 when everything worked.
#include <weft/weft.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <vector>

int main() {
  try {
    weft::InitOptions options;
    options.store = std::make_shared<weft::MemoryStore>();
    options.rank = 0;
    options.world_size = 1;
    std::shared_ptr<weft::ProcessGroup> group = weft::init_process_group(options);
    if (group->rank() != 0 || group->size() != 1) {
      std::fprintf(stderr, "weft consumer: FAILED: rank %d of %d, expected 0 of 1\n", group->rank(),
                   group->size());
      return 1;
    }

    std::vector<float> sent = {1.0f, 2.0f, 3.0f, 4.0f};
    std::vector<float> received(sent.size(), 0.0f);
    auto receive = group->irecv(received, /*src=*/0, /*tag=*/7);
    group->send(sent, /*dst=*/0, /*tag=*/7);
    receive->wait();
    if (received != sent || receive->source_rank() != 0) {
      std::fprintf(stderr, "weft consumer: FAILED: the message to myself did not arrive intact\n");
      return 1;
    }

    // An error is a weft::Error with a code.
    try {
      group->send(sent, /*dst=*/5);
      std::fprintf(stderr, "weft consumer: FAILED: sending to rank 5 of 1 did not throw\n");
      return 1;
    } catch (const weft::Error& e) {
      if (e.code() != weft::ErrorCode::kInvalidArgument) {
        std::fprintf(stderr, "weft consumer: FAILED: wrong error code: %s\n", e.what());
        return 1;
      }
    }

    std::printf("weft consumer OK (weft %s, group '%s')\n", weft::version(), group->name().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft consumer: FAILED: %s\n", e.what());
    return 1;
  }
}
