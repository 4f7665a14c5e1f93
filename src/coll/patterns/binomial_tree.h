// BinomialTree — the binomial tree of `size` ranks rooted at `root`, as one rank sees it: its
// parent, its children in send order, and the contiguous range of relative ranks its subtree
// covers. A pure schedule: no communication, no allocation.
//
// Ranks are renumbered relative to the root, v = (rank - root + size) % size, so the root is
// v = 0. The parent of v > 0 is v with its lowest set bit cleared; the children of v are
// v + 2^k for every 2^k below v's lowest set bit (every 2^k < size for the root) with
// v + 2^k < size. The subtree of v is the relative range [v, v + extent), with
// extent = min(lowbit(v), size - v) (size for the root), so a scatter or gather of blocks
// laid out in relative order moves one contiguous range per tree edge.
//
// Children are listed largest subtree first (by extent, ties by the larger 2^k): the order a
// broadcast or scatter should send in, so the deepest subtree starts earliest. Depth is
// ceil(log2(size)); the root has ceil(log2(size)) children. Thread-safe (a value type).
#pragma once

#include "util/inline_vector.h"

namespace weft::coll::patterns {

struct BinomialTree {
  struct Node {
    int rank = -1;      // group rank
    int relative = -1;  // (rank - root + size) % size
    int extent = 0;     // subtree = relative ranks [relative, relative + extent)
  };

  int size = 0;
  int root = 0;
  Node self;
  Node parent;  // rank -1 at the root
  // A rank has at most ceil(log2(size)) children, at most 31 for an int size.
  static constexpr std::size_t kMostChildren = 31;
  util::InlineVector<Node, kMostChildren> children;  // largest subtree first

  // Requires 0 <= rank < size and 0 <= root < size (throws weft::Error kInternal otherwise).
  static BinomialTree build(int rank, int size, int root);

  int rank_of(int relative) const { return (relative + root) % size; }
  int relative_of(int rank) const { return (rank - root + size) % size; }
  bool is_root() const { return self.relative == 0; }
};

// ceil(log2(size)) for size >= 1: the depth of the tree and the number of Bruck or
// dissemination rounds.
int ceil_log2(int size);

}  // namespace weft::coll::patterns
