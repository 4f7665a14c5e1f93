#include "util/warning_limiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace weft::util {
namespace {

using namespace std::chrono_literals;
using Clock = WarningLimiter::Clock;

TEST(WarningLimiter, OneLinePerIntervalAndTheNextSaysHowManyWereLeftOut) {
  WarningLimiter limiter(Subsys::kTransport, 5s);
  const Clock::time_point start = Clock::now();
  uint64_t left_out = 99;
  ASSERT_TRUE(limiter.due(start, &left_out));
  EXPECT_EQ(left_out, 0u);
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(limiter.due(start + 4s, &left_out)) << i;
  ASSERT_TRUE(limiter.due(start + 5s, &left_out));
  EXPECT_EQ(left_out, 1000u);
  EXPECT_FALSE(limiter.due(start + 6s, &left_out));
  ASSERT_TRUE(limiter.due(start + 11s, &left_out));
  EXPECT_EQ(left_out, 1u);
}

TEST(WarningLimiter, ThreadsShareOneLimit) {
  WarningLimiter limiter(Subsys::kTransport, std::chrono::hours(1));
  std::atomic<int> due{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      uint64_t left_out = 0;
      for (int i = 0; i < 1000; ++i) {
        if (limiter.due(Clock::now(), &left_out)) due.fetch_add(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(due.load(), 1);
  uint64_t left_out = 0;
  EXPECT_FALSE(limiter.due(Clock::now(), &left_out));
}

}  // namespace
}  // namespace weft::util
