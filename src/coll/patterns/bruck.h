// Bruck all-gather schedule — the rounds of Bruck's algorithm for `size` ranks, as rank `rank`
// runs them. A pure schedule: no communication.
//
// Each rank keeps a working buffer of `size` blocks whose slot i holds the block of rank
// (rank + i) % size; it starts with its own block in slot 0. In round k (distance d = 2^k,
// k = 0 .. ceil(log2(size)) - 1) it sends slots [0, blocks) to rank - d and receives slots
// [d, d + blocks) from rank + d, where blocks = min(d, size - d): after the round slots
// [0, min(2d, size)) are filled. The last round is partial when size is not a power of two.
// A final rotation moves slot i to output block (rank + i) % size.
//
// Cost: ceil(log2 p) alpha + ((p-1)/p) n beta for n bytes gathered in total, plus the local
// rotation. Thread-safe (value types).
#pragma once

#include <vector>

namespace weft::coll::patterns {

struct BruckRound {
  int distance = 0;   // 2^k: the first slot received
  int send_peer = 0;  // (rank - distance + size) % size
  int recv_peer = 0;  // (rank + distance) % size
  int blocks = 0;     // slots sent ([0, blocks)) and received ([distance, distance + blocks))
};

inline std::vector<BruckRound> bruck_rounds(int rank, int size) {
  std::vector<BruckRound> rounds;
  for (long long distance = 1; distance < size; distance <<= 1) {
    const int d = static_cast<int>(distance);
    rounds.push_back({d, (rank - d + size) % size, (rank + d) % size, d < size - d ? d : size - d});
  }
  return rounds;
}

// Output block held by working slot `slot` of rank `rank`.
inline int bruck_block_of_slot(int rank, int size, int slot) { return (rank + slot) % size; }

}  // namespace weft::coll::patterns
