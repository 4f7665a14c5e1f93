#include "coll/patterns/binomial_tree.h"

#include <algorithm>
#include <string>

#include "weft/error.h"

namespace weft::coll::patterns {

int ceil_log2(int size) {
  int rounds = 0;
  while ((1LL << rounds) < size) ++rounds;
  return rounds;
}

BinomialTree BinomialTree::build(int rank, int size, int root) {
  if (size < 1 || rank < 0 || rank >= size || root < 0 || root >= size) {
    throw Error(ErrorCode::kInternal, "binomial tree: rank " + std::to_string(rank) + ", root " +
                                          std::to_string(root) + " for size " +
                                          std::to_string(size));
  }
  BinomialTree tree;
  tree.size = size;
  tree.root = root;
  const int v = tree.relative_of(rank);
  // lowbit(v) bounds both the subtree and the children; the root behaves as lowbit = 2^ceil.
  const long long low = v == 0 ? (1LL << ceil_log2(size)) : (v & -v);
  tree.self = {rank, v, static_cast<int>(std::min<long long>(low, size - v))};
  if (v != 0) {
    const int p = v - static_cast<int>(low);
    const long long p_low = p == 0 ? (1LL << ceil_log2(size)) : (p & -p);
    tree.parent = {tree.rank_of(p), p, static_cast<int>(std::min<long long>(p_low, size - p))};
  }
  for (long long step = low >> 1; step >= 1; step >>= 1) {
    const long long c = v + step;
    if (c >= size) continue;
    tree.children.push_back({tree.rank_of(static_cast<int>(c)), static_cast<int>(c),
                             static_cast<int>(std::min<long long>(step, size - c))});
  }
  // Descending 2^k is descending extent except where size cuts a subtree short (size 17:
  // relative 16 has extent 1, relative 8 has 8): order by extent, ties by the larger 2^k.
  // A stable insertion sort: a few elements, nearly in order, and no buffer to allocate.
  for (std::size_t i = 1; i < tree.children.size(); ++i) {
    const Node moving = tree.children[i];
    std::size_t j = i;
    for (; j > 0 && tree.children[j - 1].extent < moving.extent; --j) {
      tree.children[j] = tree.children[j - 1];
    }
    tree.children[j] = moving;
  }
  return tree;
}

}  // namespace weft::coll::patterns
