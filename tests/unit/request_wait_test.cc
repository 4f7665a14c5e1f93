#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "transport/request.h"

namespace weft::transport {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::shared_ptr<Request> a_receive() {
  return std::make_shared<Request>(Request::Kind::kRecv, 1, 0, 0, Signature{}, nullptr, 0);
}

// A poll that moves bytes until `until`, then completes the request.
TEST(RequestWait, AWaiterMovingBytesSpinsOnPastItsSpin) {
  auto request = a_receive();
  const auto until = Clock::now() + 20ms;
  bool slept = false;
  bool done = request->wait(
      Clock::now() + 5s, /*spin_us=*/1000,
      [&] {
        if (Clock::now() >= until) request->complete();
        return true;
      },
      [&] { slept = true; });
  EXPECT_TRUE(done);
  EXPECT_FALSE(slept) << "a spin that moved bytes was taken for an idle one";
}

TEST(RequestWait, AnIdleWaiterSleepsAfterItsSpin) {
  auto request = a_receive();
  bool slept = false;
  bool done = request->wait(
      Clock::now() + 30ms, /*spin_us=*/1000, [] { return false; }, [&] { slept = true; });
  EXPECT_FALSE(done);
  EXPECT_TRUE(slept);
}

TEST(RequestWait, NoSpinMeansNoPollingEvenWhileBytesMove) {
  auto request = a_receive();
  int polls = 0;
  bool slept = false;
  bool done = request->wait(
      Clock::now() + 10ms, /*spin_us=*/0,
      [&] {
        ++polls;
        return true;
      },
      [&] { slept = true; });
  EXPECT_FALSE(done);
  EXPECT_TRUE(slept);
  EXPECT_LE(polls, 1);
}

}  // namespace
}  // namespace weft::transport
