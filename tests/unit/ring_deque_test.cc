// RingDeque against std::deque as the reference: the same operations, in the same order, give
// the same contents; popped elements release what they own; the capacity, once found, stays.
#include "util/ring_deque.h"

#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <random>
#include <vector>

namespace weft::util {
namespace {

std::vector<int> contents(const RingDeque<int>& ring) {
  std::vector<int> out;
  for (int value : ring) out.push_back(value);
  return out;
}

TEST(RingDeque, MatchesStdDequeUnderRandomOperations) {
  RingDeque<int> ring;
  std::deque<int> reference;
  std::mt19937 random(7);
  for (int step = 0; step < 20'000; ++step) {
    switch (random() % 5) {
      case 0:
      case 1:
        ring.push_back(step);
        reference.push_back(step);
        break;
      case 2:
        ring.push_front(step);
        reference.push_front(step);
        break;
      case 3:
        if (!reference.empty()) {
          ring.pop_front();
          reference.pop_front();
        }
        break;
      case 4:
        if (!reference.empty()) {
          std::size_t at = random() % reference.size();
          auto it = ring.begin();
          for (std::size_t i = 0; i < at; ++i) ++it;
          ring.erase(it);
          reference.erase(reference.begin() + static_cast<std::ptrdiff_t>(at));
        }
        break;
    }
    ASSERT_EQ(ring.size(), reference.size());
    if (!reference.empty()) {
      ASSERT_EQ(ring.front(), reference.front());
    }
  }
  EXPECT_EQ(contents(ring), std::vector<int>(reference.begin(), reference.end()));
  ring.clear();
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(ring.begin(), ring.end());
}

TEST(RingDeque, APoppedOrErasedElementReleasesWhatItOwns) {
  RingDeque<std::shared_ptr<int>> ring;
  auto first = std::make_shared<int>(1);
  auto second = std::make_shared<int>(2);
  ring.push_back(first);
  ring.push_back(second);
  ring.pop_front();
  EXPECT_EQ(first.use_count(), 1);
  ring.erase(ring.begin());
  EXPECT_EQ(second.use_count(), 1);
  EXPECT_TRUE(ring.empty());
}

TEST(RingDeque, KeepsItsCapacityAcrossPushesAndPops) {
  RingDeque<int> ring;
  for (int i = 0; i < 100; ++i) ring.push_back(i);
  const std::size_t capacity = ring.capacity();
  EXPECT_GE(capacity, 100u);
  for (int round = 0; round < 10'000; ++round) {
    ring.pop_front();
    ring.push_back(round);
  }
  ring.clear();
  for (int i = 0; i < 100; ++i) ring.push_front(i);
  EXPECT_EQ(ring.capacity(), capacity);
  EXPECT_EQ(ring.front(), 99);
}

}  // namespace
}  // namespace weft::util
