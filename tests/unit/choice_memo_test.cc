#include "util/choice_memo.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <thread>
#include <vector>

namespace weft::util {
namespace {

TEST(ChoiceMemo, RemembersWhatItWasToldAndNothingElse) {
  ChoiceMemo memo;
  EXPECT_FALSE(memo.find(0).has_value());  // an empty slot is not key 0's answer
  memo.remember(0, 0);
  memo.remember(12345, 7);
  EXPECT_EQ(memo.find(0), uint8_t{0});
  EXPECT_EQ(memo.find(12345), uint8_t{7});
  EXPECT_FALSE(memo.find(12346).has_value());
  memo.remember(12345, 255);
  EXPECT_EQ(memo.find(12345), uint8_t{255});
}

TEST(ChoiceMemo, KeysTooWideForASlotAreNeverRemembered) {
  ChoiceMemo memo;
  memo.remember(ChoiceMemo::kMaxKey, 3);
  EXPECT_EQ(memo.find(ChoiceMemo::kMaxKey), uint8_t{3});
  memo.remember(ChoiceMemo::kMaxKey + 1, 4);
  EXPECT_FALSE(memo.find(ChoiceMemo::kMaxKey + 1).has_value());
  EXPECT_FALSE(memo.find(UINT64_MAX).has_value());
}

// Many keys share its 64 slots: whatever it answers must be the value last told for that very
// key, never a neighbour's.
TEST(ChoiceMemo, AKeyThatLostItsSlotIsAMissNotAnotherKeysAnswer) {
  ChoiceMemo memo;
  std::map<uint64_t, uint8_t> told;
  for (uint64_t k = 0; k < 5000; ++k) {
    const uint64_t key = k * 4093 + (k << 30);
    const auto value = static_cast<uint8_t>(k * 31);
    memo.remember(key, value);
    told[key] = value;
  }
  int hits = 0;
  for (const auto& [key, value] : told) {
    if (auto found = memo.find(key)) {
      EXPECT_EQ(*found, value) << "key " << key;
      ++hits;
    }
  }
  EXPECT_GT(hits, 0);
  EXPECT_LE(hits, 64);
}

TEST(ChoiceMemo, ThreadsTellingTheSameAnswersNeverSeeATornEntry) {
  ChoiceMemo memo;
  auto answer = [](uint64_t key) { return static_cast<uint8_t>(key % 251); };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < 20000; ++i) {
        const uint64_t key = (i * 7 + static_cast<uint64_t>(t)) % 300;
        if (auto found = memo.find(key)) {
          ASSERT_EQ(*found, answer(key));
        } else {
          memo.remember(key, answer(key));
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
}

}  // namespace
}  // namespace weft::util
