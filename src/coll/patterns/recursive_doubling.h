// Recursive doubling and halving schedules: pure arithmetic, no communication, no state. Safe
// to use from any thread.
//
// Any world size works by folding it onto the largest power of two pof2 <= size:
// - Fold: each extra rank r >= pof2 sends its input to r - pof2, which reduces it into its own
//   (so ranks 0 .. size-pof2-1 are "fold targets").
// - The pof2 remaining ranks run the power-of-two algorithm; their virtual rank is their rank.
// - Unfold: each fold target sends the result back to its extra rank r + pof2.
//
// Recursive doubling (all-reduce, all-gather): round k = 0 .. rounds()-1 pairs virtual rank v
// with v ^ (1 << k). Before round k of an all-gather, v owns the 2^k blocks of its aligned group
// [v & ~(2^k - 1), + 2^k); partners own adjacent groups, and the union is the next group.
//
// Recursive halving (Rabenseifner's reduce-scatter): round k = 0 .. rounds()-1 pairs v with
// v ^ (pof2 >> (k + 1)). Before round k, v is responsible for the pof2 >> k blocks of its
// aligned group; it keeps the half that contains block v, sends the other half to its
// partner, and reduces the partner's copy of the half it keeps. After all rounds, v owns
// block v (of pof2 blocks).
#pragma once

namespace weft::coll::patterns {

// Blocks [first, last).
struct BlockSpan {
  int first = 0;
  int last = 0;
  bool operator==(const BlockSpan&) const = default;
};

struct HalvingStep {
  int partner = 0;  // virtual rank
  BlockSpan keep;   // the half this rank reduces (partner sends it)
  BlockSpan send;   // the half the partner reduces (this rank sends it)
};

struct DoublingStep {
  int partner = 0;  // virtual rank
  BlockSpan send;   // what this rank owns before the round
  BlockSpan recv;   // what the partner owns before the round
};

class PowerOfTwoFold {
 public:
  PowerOfTwoFold(int rank, int size);

  int pof2() const { return pof2_; }
  // Number of extra ranks (size - pof2).
  int extras() const { return size_ - pof2_; }
  // log2(pof2).
  int rounds() const { return rounds_; }

  // This rank sits out the power-of-two part (rank >= pof2).
  bool is_extra() const { return rank_ >= pof2_; }
  // This rank receives an extra rank's input (rank < size - pof2).
  bool is_fold_target() const { return rank_ < size_ - pof2_; }
  // The rank this one folds with: rank - pof2 for an extra, rank + pof2 for a fold target,
  // -1 otherwise.
  int fold_partner() const;
  // Virtual rank in the power-of-two part, -1 for an extra rank.
  int virtual_rank() const { return is_extra() ? -1 : rank_; }
  // The real rank of a virtual rank (the identity with this folding).
  static int real_rank(int virtual_rank) { return virtual_rank; }

  // Partner of round k in recursive doubling (virtual ranks). Not for extra ranks.
  int doubling_partner(int round) const { return rank_ ^ (1 << round); }
  // Round k of an all-gather by recursive doubling over pof2 blocks. Not for extra ranks.
  DoublingStep doubling_step(int round) const;
  // Round k of a reduce-scatter by recursive halving over pof2 blocks. Not for extra ranks.
  HalvingStep halving_step(int round) const;

 private:
  int rank_;
  int size_;
  int pof2_;
  int rounds_;
};

}  // namespace weft::coll::patterns
