// The pure schedules of the data-movement algorithms: binomial trees and Bruck rounds, checked
// for every size 1..17 and every root without any communication.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "coll/patterns/binomial_tree.h"
#include "coll/patterns/bruck.h"
#include "weft/error.h"

namespace weft {
namespace {

using coll::patterns::BinomialTree;

TEST(BinomialTreePattern, CeilLog2) {
  EXPECT_EQ(coll::patterns::ceil_log2(1), 0);
  EXPECT_EQ(coll::patterns::ceil_log2(2), 1);
  EXPECT_EQ(coll::patterns::ceil_log2(3), 2);
  EXPECT_EQ(coll::patterns::ceil_log2(4), 2);
  EXPECT_EQ(coll::patterns::ceil_log2(5), 3);
  EXPECT_EQ(coll::patterns::ceil_log2(17), 5);
}

TEST(BinomialTreePattern, EveryRankHasOneParentAndChildrenPartitionTheRest) {
  for (int size = 1; size <= 17; ++size) {
    for (int root = 0; root < size; ++root) {
      SCOPED_TRACE("size " + std::to_string(size) + " root " + std::to_string(root));
      std::vector<BinomialTree> trees;
      for (int rank = 0; rank < size; ++rank)
        trees.push_back(BinomialTree::build(rank, size, root));
      std::vector<int> parent_seen(size, 0);  // how many ranks list r as a child
      for (int rank = 0; rank < size; ++rank) {
        const auto& tree = trees[rank];
        EXPECT_EQ(tree.self.rank, rank);
        EXPECT_EQ(tree.self.relative, (rank - root + size) % size);
        EXPECT_EQ(tree.is_root(), rank == root);
        if (rank == root) {
          EXPECT_EQ(tree.parent.rank, -1);
          EXPECT_EQ(tree.self.extent, size);
        } else {
          ASSERT_GE(tree.parent.rank, 0);
          ASSERT_LT(tree.parent.rank, size);
          // My parent lists me among its children, with my subtree.
          int listed = 0;
          for (const auto& child : trees[tree.parent.rank].children) {
            if (child.rank != rank) continue;
            ++listed;
            EXPECT_EQ(child.relative, tree.self.relative);
            EXPECT_EQ(child.extent, tree.self.extent);
          }
          EXPECT_EQ(listed, 1);
          EXPECT_EQ(tree.parent.relative, trees[tree.parent.rank].self.relative);
          EXPECT_EQ(tree.parent.extent, trees[tree.parent.rank].self.extent);
          EXPECT_LT(tree.parent.relative, tree.self.relative);  // no cycles
        }
        // Children's subtrees, after me, tile my subtree exactly: [v+1, v+extent).
        std::set<int> covered;
        int previous_extent = size + 1;
        for (const auto& child : tree.children) {
          ++parent_seen[child.rank];
          EXPECT_EQ(child.rank, tree.rank_of(child.relative));
          EXPECT_LE(child.extent, previous_extent) << "children not largest subtree first";
          previous_extent = child.extent;
          EXPECT_GE(child.extent, 1);
          for (int v = child.relative; v < child.relative + child.extent; ++v) {
            EXPECT_TRUE(covered.insert(v).second) << "relative rank " << v << " covered twice";
          }
        }
        std::set<int> expected;
        for (int v = tree.self.relative + 1; v < tree.self.relative + tree.self.extent; ++v) {
          expected.insert(v);
        }
        EXPECT_EQ(covered, expected);
        EXPECT_LE(tree.children.size(), static_cast<std::size_t>(coll::patterns::ceil_log2(size)));
      }
      for (int rank = 0; rank < size; ++rank) {
        EXPECT_EQ(parent_seen[rank], rank == root ? 0 : 1) << "rank " << rank;
      }
      // Depth is ceil(log2 size): walk up from every rank.
      for (int rank = 0; rank < size; ++rank) {
        int depth = 0;
        for (int at = rank; at != root; at = trees[at].parent.rank) ++depth;
        EXPECT_LE(depth, coll::patterns::ceil_log2(size));
      }
    }
  }
}

TEST(BinomialTreePattern, KnownShapeOfEight) {
  auto root = BinomialTree::build(0, 8, 0);
  ASSERT_EQ(root.children.size(), 3u);
  EXPECT_EQ(root.children[0].rank, 4);
  EXPECT_EQ(root.children[0].extent, 4);
  EXPECT_EQ(root.children[1].rank, 2);
  EXPECT_EQ(root.children[2].rank, 1);
  auto six = BinomialTree::build(6, 8, 0);
  EXPECT_EQ(six.parent.rank, 4);
  ASSERT_EQ(six.children.size(), 1u);
  EXPECT_EQ(six.children[0].rank, 7);
  // Rooted at 5: relative ranks shift, group ranks wrap.
  auto shifted = BinomialTree::build(1, 8, 5);  // relative 4
  EXPECT_EQ(shifted.self.relative, 4);
  EXPECT_EQ(shifted.parent.rank, 5);
  EXPECT_EQ(shifted.self.extent, 4);
  ASSERT_EQ(shifted.children.size(), 2u);
  EXPECT_EQ(shifted.children[0].rank, 3);  // relative 6
  EXPECT_EQ(shifted.children[1].rank, 2);  // relative 5
}

TEST(BinomialTreePattern, PartialSubtreesWhenNotAPowerOfTwo) {
  auto root = BinomialTree::build(0, 5, 0);
  ASSERT_EQ(root.children.size(), 3u);
  EXPECT_EQ(root.children[0].relative, 2);
  EXPECT_EQ(root.children[0].extent, 2);
  EXPECT_EQ(root.children[1].relative, 4);
  EXPECT_EQ(root.children[1].extent, 1);  // min(4, 5 - 4): cut short by the size
  EXPECT_EQ(root.children[2].relative, 1);
  EXPECT_EQ(root.children[2].extent, 1);
  auto root17 = BinomialTree::build(0, 17, 0);
  ASSERT_EQ(root17.children.size(), 5u);
  EXPECT_EQ(root17.children[0].relative, 8);
  EXPECT_EQ(root17.children[4].extent, 1);
}

TEST(BinomialTreePattern, BadArgumentsAreInternalErrors) {
  EXPECT_THROW(BinomialTree::build(3, 3, 0), Error);
  EXPECT_THROW(BinomialTree::build(0, 3, 3), Error);
  EXPECT_THROW(BinomialTree::build(0, 0, 0), Error);
}

TEST(BruckPattern, RoundsFillEverySlotExactlyOnce) {
  for (int size = 1; size <= 17; ++size) {
    SCOPED_TRACE("size " + std::to_string(size));
    // Simulate: have[rank] = the blocks a rank holds, slot by slot.
    std::vector<std::vector<int>> slots(size, std::vector<int>(size, -1));
    for (int rank = 0; rank < size; ++rank) slots[rank][0] = rank;
    auto rounds0 = coll::patterns::bruck_rounds(0, size);
    EXPECT_EQ(static_cast<int>(rounds0.size()), coll::patterns::ceil_log2(size));
    for (std::size_t k = 0; k < rounds0.size(); ++k) {
      auto next = slots;
      for (int rank = 0; rank < size; ++rank) {
        auto round = coll::patterns::bruck_rounds(rank, size)[k];
        EXPECT_EQ(round.distance, 1 << k);
        // What my recv_peer sends me is its first `blocks` slots; it names me as send_peer.
        auto from = coll::patterns::bruck_rounds(round.recv_peer, size)[k];
        EXPECT_EQ(from.send_peer, rank);
        EXPECT_EQ(from.blocks, round.blocks);
        for (int b = 0; b < round.blocks; ++b) {
          ASSERT_NE(slots[round.recv_peer][b], -1) << "sending an empty slot";
          EXPECT_EQ(next[rank][round.distance + b], -1) << "slot written twice";
          next[rank][round.distance + b] = slots[round.recv_peer][b];
        }
      }
      slots = next;
    }
    for (int rank = 0; rank < size; ++rank) {
      for (int slot = 0; slot < size; ++slot) {
        EXPECT_EQ(slots[rank][slot], coll::patterns::bruck_block_of_slot(rank, size, slot));
      }
    }
  }
}

}  // namespace
}  // namespace weft
