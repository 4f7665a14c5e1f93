// The pure schedules of coll/patterns used by the reducing algorithms: ring blocks and steps,
// segmentation, the power-of-two fold, recursive halving and doubling. No ranks, no network.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "coll/collective_call.h"
#include "coll/patterns/adjacent_fold.h"
#include "coll/patterns/recursive_doubling.h"
#include "coll/patterns/ring.h"

namespace weft::coll::patterns {
namespace {

const int kSizes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 16, 17};

TEST(RingBlocks, CoverTheCountInOrderAndDifferByAtMostOne) {
  for (int size : kSizes) {
    for (std::size_t count : {0u, 1u, 2u, 5u, 7u, 8u, 16u, 17u, 1023u}) {
      std::size_t next = 0, smallest = count, largest = 0;
      for (int b = 0; b < size; ++b) {
        ElementRange block = block_range(count, size, b);
        EXPECT_EQ(block.offset, next) << "size " << size << " count " << count << " block " << b;
        next += block.count;
        smallest = std::min(smallest, block.count);
        largest = std::max(largest, block.count);
        // The first count % size blocks are the bigger ones.
        EXPECT_EQ(block.count, count / size + (static_cast<std::size_t>(b) < count % size));
      }
      EXPECT_EQ(next, count);
      EXPECT_LE(largest - smallest, 1u);
    }
  }
}

TEST(RingBlocks, RangesOfBlocksJoinTheirBlocks) {
  EXPECT_EQ(blocks_range(10, 4, 0, 4), (ElementRange{0, 10}));
  EXPECT_EQ(blocks_range(10, 4, 1, 3), (ElementRange{3, 5}));  // blocks 3,3,2,2
  EXPECT_EQ(blocks_range(10, 4, 2, 2).count, 0u);
  EXPECT_EQ(blocks_range(3, 8, 4, 8), (ElementRange{3, 0}));  // empty tail blocks
}

TEST(Ring, NeighboursWrapAround) {
  Ring first(0, 5), last(4, 5), alone(0, 1);
  EXPECT_EQ(first.left(), 4);
  EXPECT_EQ(first.right(), 1);
  EXPECT_EQ(last.right(), 0);
  EXPECT_EQ(alone.left(), 0);
  EXPECT_EQ(alone.right(), 0);
  EXPECT_EQ(alone.steps(), 0);
}

// Simulates the schedule: which ranks' contributions each rank's copy of each block holds.
TEST(Ring, ReduceScatterLeavesEachRankItsOwnBlockFullyReduced) {
  for (int size : kSizes) {
    // have[r][b]: set of ranks whose input is in rank r's copy of block b.
    std::vector<std::vector<std::set<int>>> have(size, std::vector<std::set<int>>(size));
    for (int r = 0; r < size; ++r) {
      for (int b = 0; b < size; ++b) have[r][b] = {r};
    }
    for (int step = 0; step < size - 1; ++step) {
      auto before = have;
      for (int r = 0; r < size; ++r) {
        Ring ring(r, size);
        Ring left(ring.left(), size);
        int block = ring.reduce_scatter_recv_block(step);
        ASSERT_EQ(left.reduce_scatter_send_block(step), block) << "size " << size;
        if (step > 0) {  // what is sent at step s was received at step s-1
          EXPECT_EQ(ring.reduce_scatter_send_block(step), ring.reduce_scatter_recv_block(step - 1));
        }
        for (int source : before[ring.left()][block]) have[r][block].insert(source);
      }
    }
    for (int r = 0; r < size; ++r) {
      EXPECT_EQ(have[r][r].size(), static_cast<std::size_t>(size))
          << "size " << size << " rank " << r;
    }
  }
}

TEST(Ring, AllGatherDeliversEveryBlockOnce) {
  for (int size : kSizes) {
    for (int r = 0; r < size; ++r) {
      Ring ring(r, size);
      Ring left(ring.left(), size);
      std::set<int> received;
      for (int step = 0; step < ring.steps(); ++step) {
        int block = ring.all_gather_recv_block(step);
        EXPECT_EQ(left.all_gather_send_block(step), block);
        if (step > 0) {
          EXPECT_EQ(ring.all_gather_send_block(step), ring.all_gather_recv_block(step - 1));
        }
        EXPECT_NE(block, r);
        received.insert(block);
      }
      EXPECT_EQ(ring.all_gather_send_block(0), r);
      EXPECT_EQ(received.size(), static_cast<std::size_t>(size - 1));
    }
  }
}

TEST(Segmentation, RoundsToWholeElementsAndCoversTheRun) {
  Segmentation seg = make_segmentation(64, 4, 1000, kMaxSteps);
  EXPECT_EQ(seg.segment_elements, 16u);
  EXPECT_EQ(seg.segments(0), 0u);
  EXPECT_EQ(seg.segments(16), 1u);
  EXPECT_EQ(seg.segments(17), 2u);
  EXPECT_EQ(seg.segment(17, 1), (ElementRange{16, 1}));
  // Never less than one element, even when a segment is smaller than an element.
  EXPECT_EQ(make_segmentation(3, 8, 10, kMaxSteps).segment_elements, 1u);
  EXPECT_EQ(make_segmentation(0, 2, 10, kMaxSteps).segment_elements, 1u);
  // Made bigger when the run would need more segments than step numbers allow.
  Segmentation capped = make_segmentation(4, 4, 1000, 10);
  EXPECT_EQ(capped.segment_elements, 100u);
  EXPECT_LE(capped.segments(1000), 10u);
  EXPECT_LE(make_segmentation(4, 4, 1001, 10).segments(1001), 10u);
}

TEST(Segmentation, NeverLongerThanTheLongestRun) {
  // A 1 MiB segment for a run of 2 floats is 2 elements: receive slots are sized by it.
  EXPECT_EQ(make_segmentation(1 << 20, 4, 2, kMaxSteps).segment_elements, 2u);
  EXPECT_EQ(make_segmentation(1 << 20, 4, 2, kMaxSteps).segments(2), 1u);
  EXPECT_EQ(make_segmentation(1 << 20, 4, 0, kMaxSteps).segment_elements, 1u);
  EXPECT_EQ(make_segmentation(64, 4, 1000, kMaxSteps).segment_elements, 16u);
}

TEST(PowerOfTwoFold, ExtrasFoldOntoTheFirstRanks) {
  for (int size : kSizes) {
    int pof2 = 1;
    while (pof2 * 2 <= size) pof2 *= 2;
    for (int r = 0; r < size; ++r) {
      PowerOfTwoFold fold(r, size);
      EXPECT_EQ(fold.pof2(), pof2);
      EXPECT_EQ(1 << fold.rounds(), pof2);
      EXPECT_EQ(fold.extras(), size - pof2);
      EXPECT_EQ(fold.is_extra(), r >= pof2);
      EXPECT_EQ(fold.is_fold_target(), r < size - pof2);
      if (fold.is_extra()) {
        EXPECT_EQ(fold.fold_partner(), r - pof2);
        EXPECT_EQ(fold.virtual_rank(), -1);
        EXPECT_EQ(PowerOfTwoFold(fold.fold_partner(), size).fold_partner(), r);
      } else {
        EXPECT_EQ(fold.virtual_rank(), r);
        if (!fold.is_fold_target()) {
          EXPECT_EQ(fold.fold_partner(), -1);
        }
        for (int k = 0; k < fold.rounds(); ++k) {
          int partner = fold.doubling_partner(k);
          EXPECT_LT(partner, pof2);
          EXPECT_EQ(PowerOfTwoFold(partner, size).doubling_partner(k), r);
        }
      }
    }
  }
}

TEST(PowerOfTwoFold, HalvingEndsWithEachRankOwningItsBlockAndPartnersAgree) {
  for (int pof2 : {1, 2, 4, 8, 16}) {
    for (int v = 0; v < pof2; ++v) {
      PowerOfTwoFold fold(v, pof2);
      BlockSpan span{0, pof2};
      for (int k = 0; k < fold.rounds(); ++k) {
        HalvingStep step = fold.halving_step(k);
        HalvingStep theirs = PowerOfTwoFold(step.partner, pof2).halving_step(k);
        EXPECT_EQ(theirs.partner, v);
        EXPECT_EQ(theirs.send, step.keep);  // the partner sends what I keep
        EXPECT_EQ(theirs.keep, step.send);
        // keep and send split my current span in two halves.
        EXPECT_EQ(std::min(step.keep.first, step.send.first), span.first);
        EXPECT_EQ(std::max(step.keep.last, step.send.last), span.last);
        EXPECT_EQ(step.keep.last - step.keep.first, (span.last - span.first) / 2);
        EXPECT_TRUE(step.keep.first <= v && v < step.keep.last);
        span = step.keep;
      }
      EXPECT_EQ(span, (BlockSpan{v, v + 1}));
    }
  }
}

TEST(PowerOfTwoFold, DoublingGathersEveryBlock) {
  for (int pof2 : {1, 2, 4, 8, 16}) {
    for (int v = 0; v < pof2; ++v) {
      PowerOfTwoFold fold(v, pof2);
      BlockSpan owned{v, v + 1};
      for (int k = 0; k < fold.rounds(); ++k) {
        DoublingStep step = fold.doubling_step(k);
        DoublingStep theirs = PowerOfTwoFold(step.partner, pof2).doubling_step(k);
        EXPECT_EQ(step.send, owned);
        EXPECT_EQ(theirs.send, step.recv);
        EXPECT_EQ(theirs.recv, step.send);
        EXPECT_TRUE(step.recv.last == owned.first || step.recv.first == owned.last);
        owned = {std::min(owned.first, step.recv.first), std::max(owned.last, step.recv.last)};
      }
      EXPECT_EQ(owned, (BlockSpan{0, pof2}));
    }
  }
}

TEST(AdjacentFold, PairsNeighboursAndVirtualRanksAnswerForContiguousBlocksInOrder) {
  for (int size : kSizes) {
    int pof2 = 1;
    while (pof2 * 2 <= size) pof2 *= 2;
    std::vector<int> real_of_virtual;
    for (int r = 0; r < size; ++r) {
      AdjacentFold fold(r, size);
      EXPECT_EQ(fold.pof2(), pof2);
      EXPECT_EQ(1 << fold.rounds(), pof2);
      const int partner = fold.fold_partner();
      if (partner >= 0) {
        EXPECT_EQ(AdjacentFold(partner, size).fold_partner(), r)
            << "size " << size << " rank " << r;
        EXPECT_NE(fold.sits_out(), AdjacentFold(partner, size).sits_out());
      }
      if (fold.sits_out()) {
        EXPECT_EQ(fold.virtual_rank(), -1);
        continue;
      }
      EXPECT_EQ(fold.virtual_rank(), static_cast<int>(real_of_virtual.size()));
      EXPECT_EQ(fold.real_rank(fold.virtual_rank()), r);
      real_of_virtual.push_back(r);
    }
    ASSERT_EQ(static_cast<int>(real_of_virtual.size()), pof2) << "size " << size;
    // Virtual rank v answers for its own real block and, when it took a rank in, that rank's;
    // together the virtual ranks cover every block once, in order.
    AdjacentFold any(0, size);
    int next = 0;
    for (int v = 0; v < pof2; ++v) {
      BlockSpan blocks = any.real_blocks({v, v + 1});
      EXPECT_EQ(blocks.first, next) << "size " << size << " virtual rank " << v;
      EXPECT_EQ(blocks.last, real_of_virtual[v] + 1);
      next = blocks.last;
    }
    EXPECT_EQ(next, size);
    EXPECT_EQ(any.real_blocks({0, pof2}), (BlockSpan{0, size}));
    EXPECT_EQ(any.real_blocks({1, 1}), (BlockSpan{0, 0}));
  }
}

}  // namespace
}  // namespace weft::coll::patterns
