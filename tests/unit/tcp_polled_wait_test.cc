// A connection its waiter reads is out of the event loop's epoll set: the waiter reads it alone,
// and when it meets the connection's end it hands the connection back to the loop, the only
// thread that handles a lost connection. A waiter that keeps polling must still see its peer go.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "support/tcp_pair.h"
#include "support/tcp_rank.h"

namespace weft {
namespace {

using namespace std::chrono_literals;
using testing::TcpRank;
using testing::TestMessage;

constexpr uint64_t kContext = 4;

// Polls `request` at `rank` until it is done or `limit` passed, never giving the connection back
// to the loop by stopping (as a waiter whose spin has not run out yet).
bool done_while_polling(TcpRank& rank, const transport::RequestPtr& request,
                        std::chrono::milliseconds limit) {
  rank.start_polling(*request);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!request->done() && std::chrono::steady_clock::now() < deadline) rank.poll(*request);
  const bool done = request->done();
  rank.stop_polling(*request);
  return done;
}

TEST(TcpPolledWait, APeerThatLeavesWhileItsWaiterPollsFailsTheWait) {
  transport::TcpPathOptions options;
  options.job_token = "polled-wait-test";
  testing::TcpPair ranks = testing::make_tcp_pair(options);
  TcpRank& rank0 = *ranks.receiver;
  // A first message, so that the connection is up and rank 0's waits read it themselves.
  TestMessage first = testing::post_guarded_receive(rank0, 1, kContext, 1, 64);
  TestMessage sent = testing::post_pattern_send(*ranks.sender, 0, kContext, 1, 64);
  ASSERT_TRUE(done_while_polling(rank0, first.request, 10s));
  EXPECT_TRUE(testing::holds_pattern(first, 1, 64));
  ASSERT_TRUE(testing::finishes_within(sent.request, 10s));

  TestMessage waiting = testing::post_guarded_receive(rank0, 1, kContext, 2, 64);
  std::thread leaver([&] {
    std::this_thread::sleep_for(100ms);
    ranks.sender.reset();  // says goodbye and closes its connection
  });
  const bool done = done_while_polling(rank0, waiting.request, 20s);
  leaver.join();
  ASSERT_TRUE(done) << "the waiter polled 20 s and never heard that rank 1 left";
  ASSERT_TRUE(waiting.request->failed());
  const Error& error = *waiting.request->error();
  EXPECT_EQ(error.code(), ErrorCode::kPeerFailure) << error.what();
  EXPECT_EQ(error.context().peer, 1) << error.what();
  EXPECT_NE(error.message().find("has shut down"), std::string::npos) << error.what();
}

}  // namespace
}  // namespace weft
