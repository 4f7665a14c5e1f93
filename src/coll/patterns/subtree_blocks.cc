#include "coll/patterns/subtree_blocks.h"

#include <string>

#include "weft/error.h"

namespace weft::coll::patterns {

SubtreeBlocks::SubtreeBlocks(const BinomialTree& tree, int size,
                             std::span<const std::size_t> byte_counts, const char* algorithm)
    : offsets_(size + 1, 0), relative_(size + 1, 0) {
  if (byte_counts.size() != static_cast<std::size_t>(size)) {
    throw Error(ErrorCode::kInternal, std::string(algorithm) + ": " +
                                          std::to_string(byte_counts.size()) + " byte counts for " +
                                          std::to_string(size) + " ranks");
  }
  for (int r = 0; r < size; ++r) {
    offsets_[r + 1] = offsets_[r] + byte_counts[r];
    relative_[r + 1] = relative_[r] + byte_counts[tree.rank_of(r)];
  }
}

}  // namespace weft::coll::patterns
