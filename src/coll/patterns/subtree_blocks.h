// SubtreeBlocks — where each rank's block lies when blocks of byte_counts[r] bytes are laid out
// in rank order (the user's buffer) and in the binomial tree's relative order (what one tree
// edge carries: a subtree's blocks are one contiguous relative range). A pure schedule shared
// by the binomial gather and scatter. Thread-safe (a value type).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "coll/patterns/binomial_tree.h"

namespace weft::coll::patterns {

class SubtreeBlocks {
 public:
  // Throws weft::Error(kInternal) naming `algorithm` when byte_counts has not one entry per rank.
  SubtreeBlocks(const BinomialTree& tree, int size, std::span<const std::size_t> byte_counts,
                const char* algorithm);

  // Byte offset of rank r's block in rank order; offset(size) is the total.
  std::size_t offset(int rank) const { return offsets_[rank]; }
  // Byte offset of relative rank v's block in relative order.
  std::size_t relative_offset(int v) const { return relative_[v]; }
  // Bytes of the subtree rooted at node (its contiguous relative range).
  std::size_t range_bytes(const BinomialTree::Node& node) const {
    return relative_[node.relative + node.extent] - relative_[node.relative];
  }

 private:
  std::vector<std::size_t> offsets_;
  std::vector<std::size_t> relative_;
};

}  // namespace weft::coll::patterns
