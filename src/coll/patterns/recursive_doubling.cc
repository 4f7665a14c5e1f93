#include "coll/patterns/recursive_doubling.h"

namespace weft::coll::patterns {

PowerOfTwoFold::PowerOfTwoFold(int rank, int size)
    : rank_(rank), size_(size), pof2_(1), rounds_(0) {
  while (pof2_ * 2 <= size_) {
    pof2_ *= 2;
    ++rounds_;
  }
}

int PowerOfTwoFold::fold_partner() const {
  if (is_extra()) return rank_ - pof2_;
  if (is_fold_target()) return rank_ + pof2_;
  return -1;
}

DoublingStep PowerOfTwoFold::doubling_step(int round) const {
  const int width = 1 << round;
  const int partner = rank_ ^ width;
  const int mine = rank_ & ~(width - 1);
  const int theirs = partner & ~(width - 1);
  return {partner, {mine, mine + width}, {theirs, theirs + width}};
}

HalvingStep PowerOfTwoFold::halving_step(int round) const {
  const int width = pof2_ >> round;  // blocks this rank is responsible for before the round
  const int half = width / 2;
  const int first = rank_ & ~(width - 1);
  const BlockSpan lower{first, first + half};
  const BlockSpan upper{first + half, first + width};
  const bool keep_upper = (rank_ & half) != 0;
  return {rank_ ^ half, keep_upper ? upper : lower, keep_upper ? lower : upper};
}

}  // namespace weft::coll::patterns
