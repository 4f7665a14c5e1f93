#include "coll/patterns/adjacent_fold.h"

namespace weft::coll::patterns {

AdjacentFold::AdjacentFold(int rank, int size) : rank_(rank), extras_(0) {
  while (pof2_ * 2 <= size) {
    pof2_ *= 2;
    ++rounds_;
  }
  extras_ = size - pof2_;
}

int AdjacentFold::fold_partner() const {
  if (sits_out()) return rank_ + 1;
  if (takes_in()) return rank_ - 1;
  return -1;
}

int AdjacentFold::virtual_rank() const {
  if (sits_out()) return -1;
  return rank_ < 2 * extras_ ? rank_ / 2 : rank_ - extras_;
}

int AdjacentFold::real_rank(int virtual_rank) const {
  return virtual_rank < extras_ ? 2 * virtual_rank + 1 : virtual_rank + extras_;
}

BlockSpan AdjacentFold::real_blocks(BlockSpan virtual_span) const {
  if (virtual_span.first >= virtual_span.last) return {0, 0};
  auto first_block = [&](int v) { return v < extras_ ? 2 * v : v + extras_; };
  return {first_block(virtual_span.first), real_rank(virtual_span.last - 1) + 1};
}

}  // namespace weft::coll::patterns
