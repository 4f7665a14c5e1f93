// AdjacentFold — folds any world size onto the largest power of two q <= size by pairing
// neighbours, so that the blocks each virtual rank answers for stay contiguous in rank order
// (a reduce-scatter by recursive halving cuts its buffer into contiguous halves; the fold of
// recursive_doubling.h, which pairs r with r + q, would not keep them so).
//
// With e = size - q extra ranks: of the first 2e ranks, each even rank hands its data to the odd
// rank after it and sits out; odd rank 2i + 1 becomes virtual rank i and answers for blocks 2i
// and 2i + 1. Every rank r >= 2e becomes virtual rank r - e and answers for block r. Pure
// arithmetic, safe from any thread.
#pragma once

#include "coll/patterns/recursive_doubling.h"

namespace weft::coll::patterns {

class AdjacentFold {
 public:
  AdjacentFold(int rank, int size);

  int pof2() const { return pof2_; }
  int rounds() const { return rounds_; }
  // An even rank among the first 2e: it sends its data to rank + 1 and takes no part in the
  // power-of-two rounds.
  bool sits_out() const { return rank_ < 2 * extras_ && rank_ % 2 == 0; }
  // An odd rank among the first 2e: it takes in rank - 1's data.
  bool takes_in() const { return rank_ < 2 * extras_ && rank_ % 2 == 1; }
  // rank + 1 for a rank that sits out, rank - 1 for one that takes in, else -1.
  int fold_partner() const;
  // -1 for a rank that sits out.
  int virtual_rank() const;
  int real_rank(int virtual_rank) const;
  // The real blocks [first, last) that virtual ranks [span.first, span.last) answer for.
  BlockSpan real_blocks(BlockSpan virtual_span) const;

 private:
  int rank_;
  int extras_;
  int pof2_ = 1;
  int rounds_ = 0;
};

}  // namespace weft::coll::patterns
