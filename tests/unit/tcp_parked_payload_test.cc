// Large payloads that arrive before their receive stay in the socket ("parked",
// StreamedArrivalEvents::begin_arrival) and go straight into the receive's buffer once it is
// posted; a receive that may wait behind one, the park limit, a mismatched receive and the sender's
// end all get it out of the way. And a stream of large and small messages mixed arrives whole.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "support/tcp_pair.h"
#include "support/tcp_rank.h"
#include "transport/request.h"
#include "weft/error.h"

namespace weft::transport {
namespace {

using namespace std::chrono_literals;
using testing::completes_polled;
using testing::finishes_within;
using testing::TcpRank;

constexpr uint64_t kContext = 3;
// The most the kernel's buffers of one loopback connection hold: the receiver's and the
// sender's autotuning limits (tcp_rmem's and tcp_wmem's last fields), 16 MiB each where unreadable.
std::size_t kernel_socket_buffers() {
  auto largest = [](const char* path) -> std::size_t {
    std::ifstream file(path);
    std::size_t least = 0, initial = 0, most = 0;
    return file >> least >> initial >> most ? most : std::size_t{16} << 20;
  };
  return largest("/proc/sys/net/ipv4/tcp_rmem") + largest("/proc/sys/net/ipv4/tcp_wmem");
}

// Twice what the kernel's socket buffers on both ends hold together: while its payload is
// parked, the send cannot complete.
const std::size_t kLarge = std::max(std::size_t{32} << 20, 2 * kernel_socket_buffers());

using Pair = testing::TcpPair;
using Message = testing::TestMessage;

Pair make_pair(std::chrono::milliseconds park_limit) {
  TcpPathOptions options;
  options.job_token = "parked-payload-test-token";
  options.park_limit = park_limit;
  return testing::make_tcp_pair(options);
}

Message send(TcpRank& from, int to, uint64_t tag, std::size_t bytes) {
  return testing::post_pattern_send(from, to, kContext, tag, bytes);
}

Message receive(TcpRank& at, int from, uint64_t tag, std::size_t bytes) {
  return testing::post_guarded_receive(at, from, kContext, tag, bytes);
}

void expect_payload(const Message& message, uint64_t tag, std::size_t bytes) {
  ASSERT_FALSE(message.request->failed()) << message.request->error()->what();
  for (std::size_t i = 0; i < bytes; ++i) {
    ASSERT_EQ(message.data[i], testing::pattern_byte(tag, i)) << "tag " << tag << " byte " << i;
  }
}

// Its first connection is made, so that what follows measures parking, not connecting.
void connect(Pair& pair) {
  Message hello = send(*pair.sender, 0, 99, 8);
  Message got = receive(*pair.receiver, 1, 99, 8);
  ASSERT_TRUE(finishes_within(got.request, 10s));
  ASSERT_TRUE(finishes_within(hello.request, 10s));
}

TEST(TcpParkedPayload, AWaitingPayloadStaysInTheSocketUntilItsReceiveTakesItWhole) {
  Pair pair = make_pair(60s);
  connect(pair);
  Message sent = send(*pair.sender, 0, 1, kLarge);
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(sent.request->done()) << "the payload was read with nobody to take it";
  Message got = receive(*pair.receiver, 1, 1, kLarge);
  ASSERT_TRUE(completes_polled(*pair.receiver, got.request, 20s));
  expect_payload(got, 1, kLarge);
  ASSERT_TRUE(finishes_within(sent.request, 10s));
  EXPECT_FALSE(sent.request->failed());
}

TEST(TcpParkedPayload, TheLoopDeliversAParkedPayloadToAReceiveNobodyPolls) {
  Pair pair = make_pair(60s);
  connect(pair);
  Message sent = send(*pair.sender, 0, 1, kLarge);
  std::this_thread::sleep_for(100ms);
  Message got = receive(*pair.receiver, 1, 1, kLarge);
  ASSERT_TRUE(finishes_within(got.request, 20s));
  expect_payload(got, 1, kLarge);
  ASSERT_TRUE(finishes_within(sent.request, 10s));
}

TEST(TcpParkedPayload, AReceiveForAMessageBehindItGetsItOutOfTheWay) {
  for (int from : {1, kAnyPeer}) {
    Pair pair = make_pair(60s);
    connect(pair);
    Message large = send(*pair.sender, 0, 1, kLarge);
    Message small = send(*pair.sender, 0, 2, 64);
    std::this_thread::sleep_for(100ms);
    Message got_small = receive(*pair.receiver, from, 2, 64);
    ASSERT_TRUE(completes_polled(*pair.receiver, got_small.request, 20s)) << "from " << from;
    expect_payload(got_small, 2, 64);
    ASSERT_TRUE(finishes_within(large.request, 10s));
    Message got_large = receive(*pair.receiver, 1, 1, kLarge);
    ASSERT_TRUE(finishes_within(got_large.request, 10s));
    expect_payload(got_large, 1, kLarge);
    ASSERT_TRUE(finishes_within(small.request, 10s));
  }
}

TEST(TcpParkedPayload, APayloadNobodyWantsIsReadIntoABufferAfterTheParkLimit) {
  Pair pair = make_pair(5ms);
  connect(pair);
  Message sent = send(*pair.sender, 0, 1, kLarge);
  ASSERT_TRUE(finishes_within(sent.request, 20s)) << "the sender still waits on a parked payload";
  Message got = receive(*pair.receiver, 1, 1, kLarge);
  ASSERT_TRUE(finishes_within(got.request, 10s));
  expect_payload(got, 1, kLarge);
}

TEST(TcpParkedPayload, AReceiveThatDoesNotFitFailsAndThePayloadIsSkipped) {
  Pair pair = make_pair(60s);
  connect(pair);
  Message sent = send(*pair.sender, 0, 1, kLarge);
  Message next = send(*pair.sender, 0, 2, 64);
  std::this_thread::sleep_for(100ms);
  Message wrong = receive(*pair.receiver, 1, 1, kLarge / 2);
  ASSERT_TRUE(finishes_within(wrong.request, 10s));
  ASSERT_TRUE(wrong.request->failed());
  EXPECT_EQ(wrong.request->error()->code(), ErrorCode::kMismatch);
  Message got_next = receive(*pair.receiver, 1, 2, 64);
  ASSERT_TRUE(completes_polled(*pair.receiver, got_next.request, 20s));
  expect_payload(got_next, 2, 64);
  ASSERT_TRUE(finishes_within(sent.request, 10s));
}

TEST(TcpParkedPayload, ASenderThatLeavesMidPayloadFailsTheReceiveNamingIt) {
  Pair pair = make_pair(60s);
  connect(pair);
  Message sent = send(*pair.sender, 0, 1, kLarge);
  std::this_thread::sleep_for(100ms);
  pair.sender.reset();  // its send never finishes: the flush gives up and the connection ends
  Message got = receive(*pair.receiver, 1, 1, kLarge);
  ASSERT_TRUE(finishes_within(got.request, 20s));
  ASSERT_TRUE(got.request->failed());
  EXPECT_EQ(got.request->error()->code(), ErrorCode::kPeerFailure);
  EXPECT_NE(std::string(got.request->error()->what()).find("rank 1"), std::string::npos)
      << got.request->error()->what();
}

// Large payloads are read straight into their receives (to their last byte), and after a large
// one the next read between frames takes a header only: whatever the mix of sizes, every
// message arrives whole, whether its receive was posted before it came or after.
TEST(TcpParkedPayload, ASenderThatRunsAheadWaitsInItsSocketNotInOurMemory) {
  // Messages of 512 KiB, below the size that is parked for itself, sent with no receive
  // posted (the root of back-to-back broadcasts), then an empty one and a small one. The
  // receiver holds 8 MiB of them at most and the kernel's socket buffers some more: sending
  // twice that much, over half the sends cannot complete, even long past the park limit; once
  // the receives come, every message arrives whole.
  constexpr std::size_t kBytes = 512u << 10;
  const int kMessages = static_cast<int>(2 * ((8u << 20) + kernel_socket_buffers()) / kBytes);
  Pair pair = make_pair(2ms);
  connect(pair);
  std::vector<Message> sent;
  for (int i = 0; i < kMessages; ++i) sent.push_back(send(*pair.sender, 0, 1000 + i, kBytes));
  // Behind them, an empty message and a small one: parked too, they must resume whole.
  sent.push_back(send(*pair.sender, 0, 2000, 0));
  sent.push_back(send(*pair.sender, 0, 2001, 8));
  std::this_thread::sleep_for(500ms);
  int completed = 0;
  for (const Message& message : sent) completed += message.request->done() ? 1 : 0;
  EXPECT_LT(completed, kMessages / 2) << "the receiver held what its sender ran ahead with";
  for (int i = 0; i < kMessages; ++i) {
    Message got = receive(*pair.receiver, 1, 1000 + i, kBytes);
    ASSERT_TRUE(completes_polled(*pair.receiver, got.request, 20s)) << "message " << i;
    expect_payload(got, 1000 + i, kBytes);
  }
  for (auto [tag, bytes] : {std::pair<uint64_t, std::size_t>{2000, 0}, {2001, 8}}) {
    Message got = receive(*pair.receiver, 1, tag, bytes);
    ASSERT_TRUE(completes_polled(*pair.receiver, got.request, 20s)) << "tag " << tag;
    expect_payload(got, tag, bytes);
  }
  for (const Message& message : sent) {
    ASSERT_TRUE(finishes_within(message.request, 10s));
    EXPECT_FALSE(message.request->failed());
  }
}

TEST(TcpStream, LargeAndSmallMessagesInAnyOrderArriveWhole) {
  const std::vector<std::size_t> sizes{
      300 << 10, 8,         1 << 20, (64 << 10) - 1, 64 << 10, 2, 5 << 20, 70 << 10, 1, 3 << 20,
      65,        256 << 10, 0,       (2 << 20) + 1};
  for (bool posted_first : {true, false}) {
    Pair pair = make_pair(5ms);
    connect(pair);
    std::vector<Message> received;
    if (posted_first) {
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        received.push_back(receive(*pair.receiver, 1, 10 + i, sizes[i]));
      }
    }
    std::vector<Message> sent;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      sent.push_back(send(*pair.sender, 0, 10 + i, sizes[i]));
    }
    if (!posted_first) {
      std::this_thread::sleep_for(50ms);
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        received.push_back(receive(*pair.receiver, 1, 10 + i, sizes[i]));
      }
    }
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      ASSERT_TRUE(completes_polled(*pair.receiver, received[i].request, 20s))
          << "message " << i << " of " << sizes[i] << " bytes";
      expect_payload(received[i], 10 + i, sizes[i]);
    }
    for (const Message& message : sent) ASSERT_TRUE(finishes_within(message.request, 10s));
  }
}

}  // namespace
}  // namespace weft::transport
