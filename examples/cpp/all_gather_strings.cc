// all_gather of strings (Task 1 of a torch.distributed practice notebook): every rank says
// hello in its own language, and every rank ends up with all the greetings.
//
// Collectives move arrays of numbers, so each string travels as its UTF-8 bytes (uint8). The
// greetings differ in length; two ways to cope:
//  1. Padded: all_reduce(MAX) of the lengths gives a common length; every rank pads its bytes
//     with zeros to it, all_gather fills one array of world-size x length bytes, and each
//     string is read back up to its first zero.
//  2. Uneven: all_gather the lengths first, then the list form of all_gather, which takes one
//     output buffer per rank of that rank's exact size. No padding, no zero bytes.
// Every rank checks both results against the greetings it computes itself.
//
//   weftrun -n 4 ./all_gather_strings
#include <algorithm>
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

std::string greeting(int rank) {
  static const char* const kHello[] = {"hello", "bonjour", "hola",    "ciao",
                                       "hallo", "namaste", "merhaba", "hej"};
  return std::string(kHello[rank % 8]) + " from rank " + std::to_string(rank);
}

std::vector<uint8_t> encode(const std::string& text) { return {text.begin(), text.end()}; }

// Bytes up to the first zero (the padding), as a string.
std::string decode(const uint8_t* bytes, std::size_t count) {
  const uint8_t* end = std::find(bytes, bytes + count, uint8_t{0});
  return std::string(bytes, end);
}

// 1. Pad every string to the longest one's length and gather one array.
std::vector<std::string> gather_padded(weft::ProcessGroup& group, const std::string& mine) {
  std::vector<int64_t> max_length = {static_cast<int64_t>(mine.size())};
  group.all_reduce(max_length, weft::ReduceOp::kMax);

  std::vector<uint8_t> padded = encode(mine);
  padded.resize(max_length[0], 0);
  std::vector<uint8_t> gathered(padded.size() * group.size());
  group.all_gather(padded, gathered);

  std::vector<std::string> texts;
  for (int r = 0; r < group.size(); ++r) {
    texts.push_back(decode(gathered.data() + r * padded.size(), padded.size()));
  }
  return texts;
}

// 2. Exchange the lengths, then gather into one buffer per rank of its exact size.
std::vector<std::string> gather_uneven(weft::ProcessGroup& group, const std::string& mine) {
  std::vector<int64_t> my_length = {static_cast<int64_t>(mine.size())};
  std::vector<int64_t> lengths(group.size());
  group.all_gather(my_length, lengths);

  std::vector<std::vector<uint8_t>> received;
  for (int64_t length : lengths) received.emplace_back(length);
  std::vector<weft::BufferView> outputs(received.begin(), received.end());
  group.all_gather(encode(mine), outputs);

  std::vector<std::string> texts;
  for (const auto& bytes : received) texts.emplace_back(bytes.begin(), bytes.end());
  return texts;
}

void check(const std::vector<std::string>& texts, int size, const char* how) {
  for (int r = 0; r < size; ++r) {
    if (texts[r] != greeting(r)) {
      throw std::runtime_error(std::string(how) + ": from rank " + std::to_string(r) + " got '" +
                               texts[r] + "', expected '" + greeting(r) + "'");
    }
  }
}

}  // namespace

int main() {
  int rank = -1;
  try {
    std::shared_ptr<weft::ProcessGroup> group = weft::init_process_group();
    rank = group->rank();
    const int size = group->size();
    const std::string mine = greeting(rank);

    const std::vector<std::string> padded = gather_padded(*group, mine);
    const std::vector<std::string> uneven = gather_uneven(*group, mine);
    check(padded, size, "padded all_gather");
    check(uneven, size, "uneven all_gather");

    if (rank == 0) {
      std::printf("Rank 0 gathered (padded to a common length):\n");
      for (const std::string& text : padded) std::printf("  %s\n", text.c_str());
      std::printf("Rank 0 gathered (uneven list all_gather):\n");
      for (const std::string& text : uneven) std::printf("  %s\n", text.c_str());
    }
    std::printf("Rank %d: OK, holds all %d greetings\n", rank, size);
    return 0;
  } catch (const std::exception& e) {
    if (rank >= 0) {
      std::fprintf(stderr, "Rank %d: FAILED: %s\n", rank, e.what());
    } else {
      std::fprintf(stderr, "all_gather_strings: FAILED to join the job: %s\n", e.what());
    }
    return 1;
  }
}
