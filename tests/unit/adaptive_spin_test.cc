#include "util/adaptive_spin.h"

#include <gtest/gtest.h>

#include <chrono>

namespace weft::util {
namespace {

using std::chrono::microseconds;

TEST(AdaptiveSpin, AShortWaitThatSleptDoublesTheSpinToCoverIt) {
  AdaptiveSpin spin(50, 10, 400);
  spin.after_sleep(microseconds(30));  // waited 80 us
  EXPECT_EQ(spin.spin_us(), 160);
  spin.after_sleep(microseconds(100));  // waited 260 us: twice is past the bound
  EXPECT_EQ(spin.spin_us(), 400);
}

TEST(AdaptiveSpin, ALongWaitHalvesTheSpinDownToItsFloor) {
  AdaptiveSpin spin(50, 10, 400);
  spin.after_sleep(std::chrono::milliseconds(5));
  EXPECT_EQ(spin.spin_us(), 25);
  for (int i = 0; i < 10; ++i) spin.after_sleep(std::chrono::milliseconds(5));
  EXPECT_EQ(spin.spin_us(), 10);
}

TEST(AdaptiveSpin, AFixedSpinNeverMoves) {
  AdaptiveSpin spin(7);
  spin.after_sleep(microseconds(1));
  spin.after_sleep(std::chrono::seconds(1));
  spin.bound(100, 1, 1000);
  EXPECT_EQ(spin.spin_us(), 7);
}

TEST(AdaptiveSpin, NewBoundsStartOver) {
  AdaptiveSpin spin(100, 5, 1000);
  spin.bound(5000, 5, 20'000);
  EXPECT_EQ(spin.spin_us(), 5000);
  spin.after_sleep(std::chrono::milliseconds(2));  // waited 7 ms, within the new bound
  EXPECT_EQ(spin.spin_us(), 14'000);
}

}  // namespace
}  // namespace weft::util
