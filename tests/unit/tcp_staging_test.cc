// A ready connection reads into a small staging buffer, and into a large one only once its peer
// sends in bulk (a read filled the small one): a rank with many peers, or with the spare
// connection of a pair that dialled each other at once, does not hold 256 KiB for each.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "support/tcp_pair.h"
#include "support/tcp_rank.h"
#include "transport/tcp/tcp_connection.h"

namespace weft {
namespace {

using namespace std::chrono_literals;
using testing::holds_pattern;
using testing::post_guarded_receive;
using testing::post_pattern_send;
using testing::TcpRank;
using testing::TestMessage;
using transport::TcpConnection;

constexpr uint64_t kContext = 9;

transport::TcpPathOptions pair_options() {
  transport::TcpPathOptions options;
  options.job_token = "staging-test";
  options.handshake_timeout = 10s;
  return options;
}

// One message of `bytes` from `from` to `to`, checked byte for byte.
void send_one(TcpRank& from, TcpRank& to, int to_rank, uint64_t tag, std::size_t bytes) {
  TestMessage receive = post_guarded_receive(to, 1 - to_rank, kContext, tag, bytes);
  TestMessage send = post_pattern_send(from, to_rank, kContext, tag, bytes);
  ASSERT_TRUE(testing::completes_polled(to, receive.request, 10s)) << "tag " << tag;
  EXPECT_TRUE(holds_pattern(receive, tag, bytes));
  ASSERT_TRUE(testing::completes_polled(from, send.request, 10s)) << "tag " << tag;
}

// Both ranks send at once, so both may dial; then they exchange small messages one at a time.
// Every connection between them, the spare one too, keeps the small staging.
TEST(TcpStaging, SmallMessagesOneAtATimeKeepEveryConnectionsStagingSmall) {
  testing::TcpPair ranks = testing::make_tcp_pair(pair_options());
  TcpRank& rank0 = *ranks.receiver;
  TcpRank& rank1 = *ranks.sender;
  TestMessage into0 = post_guarded_receive(rank0, 1, kContext, 1, 64);
  TestMessage into1 = post_guarded_receive(rank1, 0, kContext, 1, 64);
  TestMessage from1;
  std::thread other([&] { from1 = post_pattern_send(rank1, 0, kContext, 1, 64); });
  TestMessage from0 = post_pattern_send(rank0, 1, kContext, 1, 64);
  other.join();
  ASSERT_TRUE(testing::completes_polled(rank0, into0.request, 10s));
  ASSERT_TRUE(testing::completes_polled(rank1, into1.request, 10s));
  EXPECT_TRUE(holds_pattern(into0, 1, 64));
  EXPECT_TRUE(holds_pattern(into1, 1, 64));
  ASSERT_TRUE(testing::completes_polled(rank0, from0.request, 10s));
  ASSERT_TRUE(testing::completes_polled(rank1, from1.request, 10s));
  for (uint64_t tag = 2; tag < 50; ++tag) {
    send_one(rank0, rank1, 1, tag, 100 + tag);
    send_one(rank1, rank0, 0, tag, 100 + tag);
  }
  for (TcpRank* rank : {&rank0, &rank1}) {
    std::size_t held = rank->tcp().inbound_buffer_bytes(rank == &rank0 ? 1 : 0);
    EXPECT_GE(held, TcpConnection::kReadyStagingBytes);
    EXPECT_LE(held, 2 * TcpConnection::kReadyStagingBytes);
  }
}

// A message of 60 KiB (read through staging: it is under the 64 KiB of a direct read) fills the
// small staging at its first read, which grows it; it, and a burst of messages behind it whose
// frames do not tile the staging, arrive whole.
TEST(TcpStaging, AReadThatFillsTheSmallStagingGrowsItAndEveryMessageArrivesWhole) {
  testing::TcpPair ranks = testing::make_tcp_pair(pair_options());
  TcpRank& rank0 = *ranks.receiver;
  TcpRank& rank1 = *ranks.sender;
  send_one(rank1, rank0, 0, 1, 8);  // connected, staging small
  EXPECT_LE(rank0.tcp().inbound_buffer_bytes(1), 2 * TcpConnection::kReadyStagingBytes);
  send_one(rank1, rank0, 0, 2, 60 * 1024);
  std::size_t held = rank0.tcp().inbound_buffer_bytes(1);
  EXPECT_GE(held, TcpConnection::kStagingBytes);
  EXPECT_LE(held, TcpConnection::kStagingBytes + TcpConnection::kReadyStagingBytes);
  constexpr int kBurst = 64;
  constexpr std::size_t kBytes = 3 * 1024 + 17;
  std::vector<TestMessage> sends;
  sends.reserve(kBurst);
  for (int i = 0; i < kBurst; ++i) {
    sends.push_back(post_pattern_send(rank1, 0, kContext, 100 + i, kBytes));
  }
  for (int i = 0; i < kBurst; ++i) {
    TestMessage receive = post_guarded_receive(rank0, 1, kContext, 100 + i, kBytes);
    ASSERT_TRUE(testing::completes_polled(rank0, receive.request, 10s)) << "message " << i;
    EXPECT_TRUE(holds_pattern(receive, 100 + i, kBytes)) << "message " << i;
  }
  for (const TestMessage& send : sends) {
    ASSERT_TRUE(testing::completes_polled(rank1, send.request, 10s));
  }
}

}  // namespace
}  // namespace weft
