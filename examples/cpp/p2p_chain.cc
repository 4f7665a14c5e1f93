// A relay along the chain of ranks 0 -> 1 -> 2 -> ... -> n-1, done twice: first with
// blocking send/recv, then asynchronously with isend/irecv and some other work while the
// messages travel (the "P2P" and "async P2P" cells of a torch.distributed practice notebook).
//
// Rank 0 starts with the tensor [100, 200]. Every other rank receives the tensor from its
// left neighbour, adds 100 and passes it on to its right neighbour (the last rank keeps it),
// so rank r ends with [100 + 100 r, 200 + 100 r]. The asynchronous phase does the same from
// [1000, 2000] on its own tag. Works for any world size >= 2.
//
//   weftrun -n 3 ./p2p_chain
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "weft/weft.h"

namespace {

constexpr int kBlockingTag = 0;
constexpr int kAsyncTag = 1;

std::string show(const std::vector<float>& tensor) {
  std::string text = "[";
  for (std::size_t i = 0; i < tensor.size(); ++i) {
    char number[32];
    std::snprintf(number, sizeof number, "%s%.1f", i ? ", " : "", tensor[i]);
    text += number;
  }
  return text + "]";
}

// printf, then a newline and a flush, so that the lines of the ranks interleave whole.
[[gnu::format(printf, 1, 2)]] void say(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::printf("\n");
  std::fflush(stdout);
}

// Stands in for computation that overlaps the communication.
void do_other_work(int rank) {
  say("Rank %d is doing other work ...", rank);
  std::this_thread::sleep_for(std::chrono::milliseconds(20 + 10 * rank));
}

// Rank r's tensor after the relay that started from {first, second} on rank 0.
bool check(int rank, const std::vector<float>& tensor, float first, float second,
           const char* phase) {
  std::vector<float> expected = {first + 100.0f * rank, second + 100.0f * rank};
  if (tensor == expected) return true;
  std::fprintf(stderr, "Rank %d: FAILED (%s phase): expected %s, got %s\n", rank, phase,
               show(expected).c_str(), show(tensor).c_str());
  return false;
}

bool blocking_chain(weft::ProcessGroup& group) {
  const int rank = group.rank();
  const int last = group.size() - 1;
  std::vector<float> tensor(2, 0.0f);
  if (rank == 0) tensor = {100.0f, 200.0f};
  say("Initial data in rank %d is: %s", rank, show(tensor).c_str());

  if (rank > 0) {
    group.recv(tensor, rank - 1, kBlockingTag);
    say("Rank %d received data from Rank %d ...", rank, rank - 1);
    for (float& value : tensor) value += 100.0f;
    say("Modified data in rank %d is: %s", rank, show(tensor).c_str());
  }
  if (rank < last) {
    group.send(tensor, rank + 1, kBlockingTag);
    say("Rank %d sent data to Rank %d ...", rank, rank + 1);
  }
  say("Data in rank %d is: %s", rank, show(tensor).c_str());
  return check(rank, tensor, 100.0f, 200.0f, "blocking");
}

bool async_chain(weft::ProcessGroup& group) {
  const int rank = group.rank();
  const int last = group.size() - 1;
  std::vector<float> tensor(2, 0.0f);
  if (rank == 0) tensor = {1000.0f, 2000.0f};
  say("Initial data in rank %d is: %s", rank, show(tensor).c_str());

  if (rank > 0) {
    auto recv_request = group.irecv(tensor, rank - 1, kAsyncTag);
    say("Rank %d is receiving data from Rank %d ...", rank, rank - 1);
    do_other_work(rank);
    recv_request->wait();  // only now may the tensor be read
    say("Rank %d received data from Rank %d ...", rank, rank - 1);
    for (float& value : tensor) value += 100.0f;
    say("Modified data in rank %d is: %s", rank, show(tensor).c_str());
  }
  if (rank < last) {
    auto send_request = group.isend(tensor, rank + 1, kAsyncTag);
    say("Rank %d is sending data to Rank %d ...", rank, rank + 1);
    do_other_work(rank);
    send_request->wait();  // only now may the tensor be modified again
    say("Rank %d sent data to Rank %d ...", rank, rank + 1);
  }
  say("Data in rank %d is: %s", rank, show(tensor).c_str());
  return check(rank, tensor, 1000.0f, 2000.0f, "async");
}

}  // namespace

int main() {
  int rank = -1;
  try {
    std::shared_ptr<weft::ProcessGroup> group = weft::init_process_group();
    rank = group->rank();
    const int size = group->size();
    if (size < 2) {
      std::fprintf(stderr, "p2p_chain needs at least 2 ranks, got %d\n", size);
      return 2;
    }
    say("Starting process with rank=%d, world_size=%d", rank, size);

    bool ok = blocking_chain(*group);
    ok = async_chain(*group) && ok;

    say("Finishing process with rank=%d, world_size=%d", rank, size);
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    if (rank >= 0) {
      std::fprintf(stderr, "Rank %d: FAILED: %s\n", rank, e.what());
    } else {
      std::fprintf(stderr, "%s: FAILED to join the job: %s\n", "p2p_chain", e.what());
    }
    return 1;
  }
}
