// BlockRecycler hands back the blocks it was given, keeps no more than it may, and starts with
// the blocks it was told to have ready; RecyclingAllocator makes shared objects from them.
#include "util/block_recycler.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <vector>

#include "support/sanitizers.h"

namespace weft::util {
namespace {

TEST(BlockRecycler, HandsBackTheBlocksItWasGiven) {
  if (testing::kSanitized) GTEST_SKIP() << "under AddressSanitizer it keeps nothing, by design";
  BlockRecycler recycler(64, 4);
  void* a = recycler.take();
  void* b = recycler.take();
  recycler.give(a);
  recycler.give(b);
  EXPECT_EQ(recycler.kept(), 2u);
  std::set<void*> again{recycler.take(), recycler.take()};
  EXPECT_EQ(again, (std::set<void*>{a, b}));
  EXPECT_EQ(recycler.kept(), 0u);
  for (void* block : again) recycler.give(block);
}

TEST(BlockRecycler, KeepsNoMoreThanItMay) {
  BlockRecycler recycler(32, 3);
  std::vector<void*> blocks;
  for (int i = 0; i < 10; ++i) blocks.push_back(recycler.take());
  for (void* block : blocks) recycler.give(block);
  EXPECT_LE(recycler.kept(), 3u);
}

TEST(BlockRecycler, StartsWithTheBlocksItHasReady) {
  if (testing::kSanitized) GTEST_SKIP() << "under AddressSanitizer it keeps nothing, by design";
  BlockRecycler recycler(16, 8, 5);
  EXPECT_EQ(recycler.kept(), 5u);
  BlockRecycler capped(16, 2, 5);
  EXPECT_EQ(capped.kept(), 2u);
}

struct Counted {
  explicit Counted(int value) : value(value) { ++alive; }
  ~Counted() { --alive; }
  int value;
  static inline int alive = 0;
};

TEST(RecyclingAllocator, MakesAndDestroysSharedObjects) {
  {
    std::vector<std::shared_ptr<Counted>> objects;
    for (int i = 0; i < 100; ++i) {
      objects.push_back(std::allocate_shared<Counted>(RecyclingAllocator<Counted>(), i));
    }
    EXPECT_EQ(Counted::alive, 100);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(objects[static_cast<std::size_t>(i)]->value, i);
  }
  EXPECT_EQ(Counted::alive, 0);
}

}  // namespace
}  // namespace weft::util
