// Several TCP connections per peer pair (WEFT_SOCKET_NSTREAMS, transport/tcp/streams.h): large
// messages are split across them and arrive whole and in order whether their receive comes
// first, later, or much later (parked); from several threads at once and both ways; a receive
// that does not fit, a receive cancelled and a send cancelled leave the connections in step.
// A peer's death mid-message: tests/weftrun/weftrun_hosts_test.cc, on simulated hosts.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "support/tcp_pair.h"
#include "support/tcp_rank.h"
#include "transport/request.h"
#include "transport/tcp/streams.h"
#include "weft/error.h"

namespace weft::transport {
namespace {

using namespace std::chrono_literals;
using testing::completes_polled;
using testing::finishes_within;
using testing::TcpRank;

constexpr uint64_t kContext = 5;
constexpr uint32_t kStreams = 4;

using Pair = testing::TcpPair;
using Message = testing::TestMessage;
using testing::pattern_byte;

std::unique_ptr<TcpRank> make_rank(int rank, uint32_t streams) {
  TcpPathOptions options;
  options.rank = rank;
  options.world_size = 2;
  options.job_token = "streams-test-token";
  options.listen_address = util::resolve("127.0.0.1", 0);
  options.streams = streams;
  return std::make_unique<TcpRank>(rank, options, nullptr);
}

Pair make_streams_pair(uint32_t streams = kStreams,
                       std::chrono::milliseconds park_limit = TcpPathOptions{}.park_limit) {
  TcpPathOptions options;
  options.job_token = "streams-test-token";
  options.streams = streams;
  options.park_limit = park_limit;
  return testing::make_tcp_pair(options);
}

Message send(TcpRank& from, int to, uint64_t tag, std::size_t bytes) {
  return testing::post_pattern_send(from, to, kContext, tag, bytes);
}

Message receive(TcpRank& at, int from, uint64_t tag, std::size_t capacity) {
  return testing::post_guarded_receive(at, from, kContext, tag, capacity);
}

::testing::AssertionResult holds(const Message& message, uint64_t tag, std::size_t bytes) {
  return testing::holds_pattern(message, tag, bytes);
}

// Sends until the sender's extra connections are up (they open at its first large message).
void open_streams(Pair& pair, uint32_t expected = kStreams) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  uint64_t tag = 1000;
  while (pair.sender->tcp().streams_to(0) < expected &&
         std::chrono::steady_clock::now() < deadline) {
    Message got = receive(*pair.receiver, 1, tag, 2 * kSmallestStripe);
    Message sent = send(*pair.sender, 0, tag, 2 * kSmallestStripe);
    ASSERT_TRUE(finishes_within(got.request, 10s));
    ASSERT_TRUE(finishes_within(sent.request, 10s));
    ASSERT_TRUE(holds(got, tag, 2 * kSmallestStripe));
    ++tag;
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(pair.sender->tcp().streams_to(0), expected);
}

TEST(TcpStreams, ALargeMessageGoesOnEveryStreamAndArrivesWhole) {
  Pair pair = make_streams_pair();
  open_streams(pair);
  uint64_t tag = 1;
  for (std::size_t bytes : {2 * kSmallestStripe, std::size_t{1'048'579}, std::size_t{8'392'705},
                            std::size_t{33} << 20}) {
    Message got = receive(*pair.receiver, 1, tag, bytes);
    Message sent = send(*pair.sender, 0, tag, bytes);
    ASSERT_TRUE(completes_polled(*pair.receiver, got.request, 30s)) << bytes;
    ASSERT_TRUE(finishes_within(sent.request, 30s)) << bytes;
    EXPECT_FALSE(sent.request->failed());
    EXPECT_TRUE(holds(got, tag, bytes));
    EXPECT_EQ(got.request->source, 1);
    ++tag;
  }
}

// The first message striped over a stream the moment the sender sees it ready: the receiver
// must know the stream by then (it takes it as the peer's before it acknowledges it). Pairs
// anew each time, with no pause between messages: the window is microseconds wide, so this
// catches a receiver that takes its streams late only now and then.
TEST(TcpStreams, AMessageStripedTheMomentItsStreamsAreReadyFindsThem) {
  for (int pair_number = 0; pair_number < 10; ++pair_number) {
    Pair pair = make_streams_pair();
    uint64_t tag = 1;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (pair.sender->tcp().streams_to(0) < kStreams &&
           std::chrono::steady_clock::now() < deadline) {
      Message got = receive(*pair.receiver, 1, tag, 1u << 20);
      Message sent = send(*pair.sender, 0, tag, 1u << 20);
      ASSERT_TRUE(completes_polled(*pair.receiver, got.request, 10s));
      ASSERT_TRUE(holds(got, tag, 1u << 20)) << "pair " << pair_number;
      ++tag;
    }
    Message got = receive(*pair.receiver, 1, tag, 1u << 20);
    Message sent = send(*pair.sender, 0, tag, 1u << 20);
    ASSERT_TRUE(completes_polled(*pair.receiver, got.request, 10s));
    ASSERT_TRUE(holds(got, tag, 1u << 20)) << "pair " << pair_number;
  }
}

TEST(TcpStreams, OneConnectionWhenOneIsAsked) {
  Pair pair = make_streams_pair(1);
  Message got = receive(*pair.receiver, 1, 1, 8u << 20);
  Message sent = send(*pair.sender, 0, 1, 8u << 20);
  ASSERT_TRUE(finishes_within(got.request, 30s));
  EXPECT_TRUE(holds(got, 1, 8u << 20));
  EXPECT_EQ(pair.sender->tcp().streams_to(0), 1u);
}

// 1 MiB waits in a buffer of the receiver's; 16 MiB waits in the sockets (parked) with its
// pieces behind it on every stream.
TEST(TcpStreams, AMessageThatComesBeforeItsReceiveArrivesWhole) {
  Pair pair = make_streams_pair();
  open_streams(pair);
  uint64_t tag = 1;
  for (std::size_t bytes : {std::size_t{1} << 20, std::size_t{16} << 20}) {
    Message sent = send(*pair.sender, 0, tag, bytes);
    std::this_thread::sleep_for(200ms);
    Message got = receive(*pair.receiver, 1, tag, bytes);
    ASSERT_TRUE(completes_polled(*pair.receiver, got.request, 30s)) << bytes;
    ASSERT_TRUE(finishes_within(sent.request, 30s)) << bytes;
    EXPECT_TRUE(holds(got, tag, bytes));
    ++tag;
  }
}

// Rank 0 sends its large messages on the connection rank 1 made to it: it learns rank 1's
// address (through its lookup) only to open the streams.
TEST(TcpStreams, ARankThatWasConnectedToLearnsWhereToOpenItsStreams) {
  Pair pair{make_rank(0, kStreams), make_rank(1, kStreams)};
  const util::SocketAddress sender_address = pair.sender->listen_address();
  std::atomic<int> lookups{0};
  pair.receiver->tcp().set_peer_lookup([&](int peer) {
    ++lookups;
    return std::vector<util::SocketAddress>{peer == 1 ? sender_address
                                                      : pair.receiver->listen_address()};
  });
  pair.sender->set_peer_addresses({pair.receiver->listen_address(), sender_address});
  Message hello = send(*pair.sender, 0, 1, 8);
  Message got_hello = receive(*pair.receiver, kAnyPeer, 1, 8);  // no address wanted for that
  ASSERT_TRUE(finishes_within(got_hello.request, 10s));
  ASSERT_EQ(lookups.load(), 0);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  uint64_t tag = 2;
  do {
    Message got = receive(*pair.sender, 0, tag, 3u << 20);
    Message sent = send(*pair.receiver, 1, tag, 3u << 20);
    ASSERT_TRUE(completes_polled(*pair.sender, got.request, 30s));
    EXPECT_TRUE(holds(got, tag, 3u << 20));
    ++tag;
  } while (pair.receiver->tcp().streams_to(1) < kStreams &&
           std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(pair.receiver->tcp().streams_to(1), kStreams);
  EXPECT_EQ(lookups.load(), 1);
}

// Small and striped messages back to back on one tag: matched in the order sent, each whole,
// whichever comes first, the receive or the message.
TEST(TcpStreams, MixedSizesKeepTheirOrder) {
  Pair pair = make_streams_pair();
  open_streams(pair);
  const std::vector<std::size_t> sizes = {8,       600'000, 3u << 20, 0,   2u << 20, 100,
                                          524'288, 65'536,  5u << 20, 777, 1u << 20, 4u << 20};
  constexpr uint64_t kTag = 7;
  std::vector<Message> received;
  for (std::size_t i = 0; i < sizes.size() / 2; ++i) {
    received.push_back(receive(*pair.receiver, 1, kTag, sizes[i]));
  }
  std::vector<Message> sent;
  for (std::size_t bytes : sizes) sent.push_back(send(*pair.sender, 0, kTag, bytes));
  std::this_thread::sleep_for(100ms);
  for (std::size_t i = sizes.size() / 2; i < sizes.size(); ++i) {
    received.push_back(receive(*pair.receiver, 1, kTag, sizes[i]));
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_TRUE(completes_polled(*pair.receiver, received[i].request, 30s)) << i;
    EXPECT_TRUE(holds(received[i], kTag, sizes[i])) << "message " << i;
  }
  for (const Message& message : sent) ASSERT_TRUE(finishes_within(message.request, 30s));
}

// Two threads send striped messages to the same peer at once: every stream must carry its
// pieces in the order of their headers.
TEST(TcpStreams, TwoThreadsSendingAtOnce) {
  Pair pair = make_streams_pair();
  open_streams(pair);
  constexpr int kEach = 12;
  std::vector<Message> received;
  for (int i = 0; i < kEach; ++i) {
    for (uint64_t tag : {uint64_t{1}, uint64_t{2}}) {
      received.push_back(receive(*pair.receiver, 1, tag, (1u << 20) + 4096 * tag + i));
    }
  }
  std::vector<Message> sent[2];
  std::vector<std::thread> threads;
  for (uint64_t tag : {uint64_t{1}, uint64_t{2}}) {
    threads.emplace_back([&, tag] {
      for (int i = 0; i < kEach; ++i) {
        sent[tag - 1].push_back(send(*pair.sender, 0, tag, (1u << 20) + 4096 * tag + i));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (std::size_t k = 0; k < received.size(); ++k) {
    const uint64_t tag = k % 2 + 1;
    const std::size_t bytes = (1u << 20) + 4096 * tag + k / 2;
    ASSERT_TRUE(completes_polled(*pair.receiver, received[k].request, 30s)) << k;
    EXPECT_TRUE(holds(received[k], tag, bytes)) << "message " << k;
  }
  for (auto& list : sent) {
    for (const Message& message : list) ASSERT_TRUE(finishes_within(message.request, 30s));
  }
}

TEST(TcpStreams, BothWaysAtOnce) {
  Pair pair = make_streams_pair();
  open_streams(pair);
  constexpr std::size_t kBytes = 12u << 20;
  Message to_sender = receive(*pair.sender, 0, 3, kBytes);
  Message to_receiver = receive(*pair.receiver, 1, 4, kBytes);
  Message from_receiver = send(*pair.receiver, 1, 3, kBytes);
  Message from_sender = send(*pair.sender, 0, 4, kBytes);
  std::thread other([&] { EXPECT_TRUE(completes_polled(*pair.sender, to_sender.request, 30s)); });
  EXPECT_TRUE(completes_polled(*pair.receiver, to_receiver.request, 30s));
  other.join();
  EXPECT_TRUE(holds(to_sender, 3, kBytes));
  EXPECT_TRUE(holds(to_receiver, 4, kBytes));
  ASSERT_TRUE(finishes_within(from_receiver.request, 30s));
  ASSERT_TRUE(finishes_within(from_sender.request, 30s));
  EXPECT_EQ(pair.receiver->tcp().streams_to(1), kStreams);
}

// A receive too small for the message fails naming both sizes; none of the message's pieces is
// written anywhere, and the next message arrives whole.
TEST(TcpStreams, AReceiveThatDoesNotFitFailsAndTheStreamsStayInStep) {
  Pair pair = make_streams_pair();
  open_streams(pair);
  Message small = receive(*pair.receiver, 1, 1, 1u << 20);
  Message next = receive(*pair.receiver, 1, 2, 3u << 20);
  Message too_large = send(*pair.sender, 0, 1, 4u << 20);
  Message fits = send(*pair.sender, 0, 2, 3u << 20);
  ASSERT_TRUE(completes_polled(*pair.receiver, small.request, 30s));
  ASSERT_TRUE(small.request->failed());
  EXPECT_EQ(small.request->error()->code(), ErrorCode::kMismatch) << small.request->error()->what();
  ASSERT_TRUE(completes_polled(*pair.receiver, next.request, 30s));
  EXPECT_TRUE(holds(next, 2, 3u << 20));
  for (std::size_t i = 0; i <= (1u << 20); ++i) ASSERT_EQ(small.data[i], 0xee) << i;
}

// A receive cancelled while its message streams in: its buffer is never written after the
// cancel returns, and the next message still arrives whole. The cancel comes sooner each try
// until one lands mid-message.
TEST(TcpStreams, AReceiveCancelledMidMessageIsNeverWrittenAfter) {
  Pair pair = make_streams_pair();
  open_streams(pair);
  constexpr std::size_t kBytes = 32u << 20;
  bool cancelled_once = false;
  uint64_t tag = 1;
  for (int delay_us : {1000, 500, 200, 50, 0}) {
    Message got = receive(*pair.receiver, 1, tag, kBytes);
    Message after = receive(*pair.receiver, 1, tag + 1, 1u << 20);
    Message sent{std::vector<uint8_t>(kBytes), nullptr};
    for (std::size_t i = 0; i < kBytes; ++i) sent.data[i] = pattern_byte(tag, i);
    sent.request = std::make_shared<Request>(Request::Kind::kSend, 0, kContext, tag, Signature{},
                                             sent.data.data(), kBytes);
    // From another thread: posting writes what the sockets take before it returns.
    bool cancelled = false;
    std::thread canceller([&] {
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      auto reason = std::make_shared<const Error>(ErrorCode::kTimeout, "cancelled by the test");
      cancelled = pair.receiver->cancel(*got.request, reason);
      if (cancelled) std::fill(got.data.begin(), got.data.end(), 0x5a);
    });
    pair.sender->post_send(sent.request);
    canceller.join();
    if (cancelled) {
      ASSERT_TRUE(got.request->failed());
    }
    Message next = send(*pair.sender, 0, tag + 1, 1u << 20);
    ASSERT_TRUE(completes_polled(*pair.receiver, after.request, 30s));
    EXPECT_TRUE(holds(after, tag + 1, 1u << 20));
    if (cancelled) {
      for (std::size_t i = 0; i < got.data.size(); ++i) ASSERT_EQ(got.data[i], 0x5a) << i;
    } else {
      EXPECT_TRUE(holds(got, tag, kBytes));
    }
    ASSERT_TRUE(finishes_within(sent.request, 30s));
    ASSERT_TRUE(finishes_within(next.request, 30s));
    cancelled_once |= cancelled;
    tag += 2;
  }
  EXPECT_TRUE(cancelled_once) << "every receive completed before its cancel";
}

// A send cancelled with its pieces queued: it fails at once, and what the receiver gets is the
// message as it was when cancelled (the rest goes from the sender's own copy), the streams in
// step for the next one.
TEST(TcpStreams, ASendCancelledMidMessageStillDeliversItWhole) {
  // The receiver keeps the unexpected message parked in its socket for the whole test: with the
  // default limit it would read all of it into a buffer of its own after 2 ms, and a test thread
  // descheduled that long would find the send complete before it cancels.
  Pair pair = make_streams_pair(kStreams, 60s);
  open_streams(pair);
  constexpr std::size_t kBytes = 64u << 20;
  Message sent = send(*pair.sender, 0, 1, kBytes);
  auto reason = std::make_shared<const Error>(ErrorCode::kTimeout, "cancelled by the test");
  // Its receive is not posted: the message waits in the sockets, most of it still queued.
  ASSERT_TRUE(pair.sender->cancel(*sent.request, reason));
  EXPECT_TRUE(sent.request->failed());
  std::fill(sent.data.begin(), sent.data.end(), 0);  // the caller may reuse its buffer now
  Message got = receive(*pair.receiver, 1, 1, kBytes);
  ASSERT_TRUE(completes_polled(*pair.receiver, got.request, 60s));
  EXPECT_TRUE(holds(got, 1, kBytes));
  Message next_got = receive(*pair.receiver, 1, 2, 2u << 20);
  Message next = send(*pair.sender, 0, 2, 2u << 20);
  ASSERT_TRUE(completes_polled(*pair.receiver, next_got.request, 30s));
  EXPECT_TRUE(holds(next_got, 2, 2u << 20));
}

}  // namespace
}  // namespace weft::transport
