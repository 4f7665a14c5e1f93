// The budgets and the record of a tour of a peer's addresses (transport/tcp/candidate_dial.h).
#include "transport/tcp/candidate_dial.h"

#include <gtest/gtest.h>

namespace weft::transport {
namespace {

using namespace std::chrono_literals;
using Clock = CandidateDial::Clock;

std::vector<util::SocketAddress> three() {
  return {util::resolve("10.0.0.1", 5), util::resolve("fd00::1", 5), util::resolve("127.0.0.1", 5)};
}

TEST(CandidateDial, EachButTheLastHasAShortBudgetAndTheLastWhatIsLeft) {
  Clock::time_point start{};
  CandidateDial dial(three(), 10s, start);
  EXPECT_EQ(dial.current().to_string(), "10.0.0.1:5");
  EXPECT_EQ(dial.connect_budget(), CandidateDial::kConnectBudget);
  EXPECT_EQ(dial.connect_deadline(), start + CandidateDial::kConnectBudget);
  ASSERT_TRUE(dial.advance("timed out after 2000 ms", start + 2s));
  EXPECT_EQ(dial.current().to_string(), "[fd00::1]:5");
  ASSERT_TRUE(dial.advance("refused", start + 2100ms));
  EXPECT_EQ(dial.connect_budget(), 7900ms);
  EXPECT_FALSE(dial.advance("refused", start + 3s));
  EXPECT_EQ(dial.failures(),
            "10.0.0.1:5: timed out after 2000 ms, [fd00::1]:5: refused, 127.0.0.1:5: refused");
  EXPECT_EQ(dial.all(), "10.0.0.1:5 or [fd00::1]:5 or 127.0.0.1:5");
}

TEST(CandidateDial, ACandidateReachedAfterTheWindowStillGetsItsFloor) {
  Clock::time_point start{};
  CandidateDial dial(three(), 1s, start);
  EXPECT_EQ(dial.connect_budget(), 1000ms);
  ASSERT_TRUE(dial.advance("timed out after 1000 ms", start + 5s));
  EXPECT_EQ(dial.connect_budget(), CandidateDial::kConnectFloor);
  ASSERT_TRUE(dial.advance("refused", start + 6s));
  EXPECT_EQ(dial.connect_budget(), CandidateDial::kConnectFloor);
}

TEST(CandidateDial, NoFailureBeforeTheFirstAttemptEnds) {
  CandidateDial dial({util::resolve("127.0.0.1", 9)}, 10s, Clock::now());
  EXPECT_EQ(dial.failures(), "");
  EXPECT_EQ(dial.connect_budget(), 10s);
  EXPECT_FALSE(dial.advance("refused", Clock::now()));
  EXPECT_EQ(dial.failures(), "127.0.0.1:9: refused");
}

}  // namespace
}  // namespace weft::transport
