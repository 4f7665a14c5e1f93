// Large payloads sent with MSG_ZEROCOPY (WEFT_SOCKET_ZEROCOPY, transport/tcp/zerocopy.h): they
// arrive whole, alone, among small messages and striped over several connections; a send
// completes once the kernel has released the caller's buffer, whether its thread polls or
// sleeps; a connection stops asking once the kernel reports that it copies; a send the kernel
// still reads cannot be withdrawn; a peer's end fails the sends it still held.
//
// Loopback always copies (at delivery, after the sender handed its pages over), which the
// kernel reports like a real NIC's release: the tests keep asking regardless
// (zerocopy_when_copied), except the one that checks the stop.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/hand_driven_rank.h"
#include "support/tcp_pair.h"
#include "support/tcp_rank.h"
#include "transport/request.h"
#include "transport/tcp/streams.h"
#include "transport/tcp/zerocopy.h"
#include "weft/error.h"

namespace weft::transport {
namespace {

using namespace std::chrono_literals;
using testing::completes_polled;
using testing::finishes_within;
using testing::holds_pattern;
using testing::TcpPair;
using testing::TcpRank;
using testing::TestMessage;

constexpr uint64_t kContext = 7;

TcpPair make_pair(bool when_copied = true, uint32_t streams = 1) {
  TcpPathOptions options;
  options.job_token = "zerocopy-test-token";
  options.zerocopy = ZerocopyMode::kOn;
  options.zerocopy_when_copied = when_copied;
  options.streams = streams;
  return testing::make_tcp_pair(options);
}

TestMessage send(TcpRank& from, int to, uint64_t tag, std::size_t bytes) {
  return testing::post_pattern_send(from, to, kContext, tag, bytes);
}

TestMessage receive(TcpRank& at, int from, uint64_t tag, std::size_t capacity) {
  return testing::post_guarded_receive(at, from, kContext, tag, capacity);
}

TEST(ZerocopySetting, ParsesAutoOnAndOff) {
  EXPECT_EQ(parse_zerocopy_setting(""), ZerocopyMode::kAuto);
  EXPECT_EQ(parse_zerocopy_setting("auto"), ZerocopyMode::kAuto);
  EXPECT_EQ(parse_zerocopy_setting("0"), ZerocopyMode::kOff);
  EXPECT_EQ(parse_zerocopy_setting("1"), ZerocopyMode::kOn);
  for (const char* wrong : {"yes", "2", "on ", "-1"}) {
    try {
      parse_zerocopy_setting(wrong);
      ADD_FAILURE() << wrong << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("WEFT_SOCKET_ZEROCOPY"), std::string::npos);
    }
  }
}

TEST(ZerocopySetting, AutoAsksOnFastLinksOnly) {
  EXPECT_TRUE(zerocopy_wanted(ZerocopyMode::kAuto, 100'000));
  EXPECT_TRUE(zerocopy_wanted(ZerocopyMode::kAuto, kZerocopyMinMbps));
  EXPECT_FALSE(zerocopy_wanted(ZerocopyMode::kAuto, 10'000));
  EXPECT_FALSE(zerocopy_wanted(ZerocopyMode::kAuto, -1));  // loopback, veth
  EXPECT_TRUE(zerocopy_wanted(ZerocopyMode::kOn, -1));
  EXPECT_FALSE(zerocopy_wanted(ZerocopyMode::kOff, 100'000));
}

TEST(ZerocopyNotice, CoversItsRangeAcrossTheWrap) {
  const ZerocopyNotice notice{0xffff'fffe, 1, false};
  for (uint32_t id : {0xffff'fffeu, 0xffff'ffffu, 0u, 1u}) EXPECT_TRUE(covers(notice, id)) << id;
  for (uint32_t id : {0xffff'fffdu, 2u, 0x8000'0000u}) EXPECT_FALSE(covers(notice, id)) << id;
}

TEST(TcpZerocopy, LargeMessagesArriveWholeAndTheirSendsCompleteWhenReleased) {
  TcpPair pair = make_pair();
  uint64_t tag = 1;
  for (std::size_t bytes : {kZerocopyMinBytes, std::size_t{1'048'579}, std::size_t{33} << 20}) {
    TestMessage got = receive(*pair.receiver, 1, tag, bytes);
    TestMessage sent = send(*pair.sender, 0, tag, bytes);
    ASSERT_TRUE(completes_polled(*pair.receiver, got.request, 30s)) << bytes;
    ASSERT_TRUE(completes_polled(*pair.sender, sent.request, 30s)) << bytes;
    EXPECT_FALSE(sent.request->failed()) << bytes;
    EXPECT_TRUE(holds_pattern(got, tag, bytes));
    ++tag;
  }
  EXPECT_GT(pair.sender->tcp().zerocopy_sends(), 0u);
}

// Nobody polls the sender: the event loop alone reads the kernel's notices and completes it.
TEST(TcpZerocopy, ASendWhoseThreadSleepsCompletesByTheEventLoop) {
  TcpPair pair = make_pair();
  constexpr std::size_t kBytes = 8u << 20;
  TestMessage sent = send(*pair.sender, 0, 1, kBytes);
  TestMessage got = receive(*pair.receiver, 1, 1, kBytes);
  ASSERT_TRUE(finishes_within(got.request, 30s));
  ASSERT_TRUE(finishes_within(sent.request, 30s));
  EXPECT_FALSE(sent.request->failed());
  EXPECT_TRUE(holds_pattern(got, 1, kBytes));
  EXPECT_GT(pair.sender->tcp().zerocopy_sends(), 0u);
}

// Small frames between zero-copy payloads go in ordinary calls: every message keeps its place.
TEST(TcpZerocopy, SmallAndLargeMessagesMixedKeepTheirOrder) {
  TcpPair pair = make_pair();
  std::vector<TestMessage> received, sent;
  std::vector<std::size_t> sizes;
  for (uint64_t tag = 0; tag < 24; ++tag) {
    sizes.push_back(tag % 3 == 0 ? (std::size_t{1} << 20) + tag : 8 + tag);
  }
  for (uint64_t tag = 0; tag < sizes.size(); ++tag) {
    sent.push_back(send(*pair.sender, 0, tag, sizes[tag]));
  }
  for (uint64_t tag = 0; tag < sizes.size(); ++tag) {
    received.push_back(receive(*pair.receiver, 1, tag, sizes[tag]));
  }
  for (uint64_t tag = 0; tag < sizes.size(); ++tag) {
    ASSERT_TRUE(completes_polled(*pair.receiver, received[tag].request, 30s)) << tag;
    EXPECT_TRUE(holds_pattern(received[tag], tag, sizes[tag]));
  }
  for (const TestMessage& message : sent) {
    ASSERT_TRUE(completes_polled(*pair.sender, message.request, 30s));
    EXPECT_FALSE(message.request->failed());
  }
  EXPECT_GT(pair.sender->tcp().zerocopy_sends(), 0u);
}

// A message each way and back, checked whole.
void exchange(TcpPair& pair, uint64_t tag, std::size_t bytes) {
  TestMessage got = receive(*pair.receiver, 1, tag, bytes);
  TestMessage sent = send(*pair.sender, 0, tag, bytes);
  ASSERT_TRUE(completes_polled(*pair.receiver, got.request, 30s));
  ASSERT_TRUE(completes_polled(*pair.sender, sent.request, 30s));
  EXPECT_FALSE(sent.request->failed());
  EXPECT_TRUE(holds_pattern(got, tag, bytes));
}

// Sends until the sender's extra connections are up (they open at its first large message).
void open_streams(TcpPair& pair, uint32_t streams) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  uint64_t tag = 1000;
  while (pair.sender->tcp().streams_to(0) < streams &&
         std::chrono::steady_clock::now() < deadline) {
    exchange(pair, tag++, 2 * kSmallestStripe);
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(pair.sender->tcp().streams_to(0), streams);
}

TEST(TcpZerocopy, PiecesStripedOverSeveralConnectionsGoZeroCopyToo) {
  constexpr uint32_t kStreams = 4;
  TcpPair pair = make_pair(/*when_copied=*/true, kStreams);
  open_streams(pair, kStreams);
  const uint64_t before = pair.sender->tcp().zerocopy_sends();
  exchange(pair, 1, (std::size_t{8} << 20) + 12'345);
  EXPECT_GE(pair.sender->tcp().zerocopy_sends(), before + kStreams);
}

TEST(TcpZerocopy, AConnectionStopsAskingOnceTheKernelReportsACopy) {
  TcpPair pair = make_pair(/*when_copied=*/false);
  constexpr std::size_t kBytes = 4u << 20;
  uint64_t after_first = 0;
  for (uint64_t tag = 1; tag <= 3; ++tag) {
    TestMessage got = receive(*pair.receiver, 1, tag, kBytes);
    TestMessage sent = send(*pair.sender, 0, tag, kBytes);
    ASSERT_TRUE(completes_polled(*pair.receiver, got.request, 30s));
    ASSERT_TRUE(completes_polled(*pair.sender, sent.request, 30s));
    EXPECT_TRUE(holds_pattern(got, tag, kBytes));
    // The first send's notices are all read by its completion; the first said "copied".
    if (tag == 1) after_first = pair.sender->tcp().zerocopy_sends();
  }
  EXPECT_GT(after_first, 0u);
  EXPECT_EQ(pair.sender->tcp().zerocopy_sends(), after_first);
}

// The largest buffer the kernel lets a TCP socket grow to, sending (`wmem`) or receiving: the
// third field of /proc/sys/net/ipv4/tcp_{w,r}mem; `fallback` where it cannot be read.
std::size_t largest_tcp_buffer(const char* kind, std::size_t fallback) {
  std::ifstream file(std::string("/proc/sys/net/ipv4/tcp_") + kind);
  std::size_t smallest = 0, initial = 0, largest = 0;
  return file >> smallest >> initial >> largest ? largest : fallback;
}

// More than the kernel can hold of a message striped over `streams` connections whose reader
// has stopped: each connection's send and receive buffers at their largest (what the exchanges
// before it may have grown them to), and a quarter more.
std::size_t more_than_the_kernel_holds(uint32_t streams) {
  const std::size_t per_connection =
      largest_tcp_buffer("wmem", 4u << 20) + largest_tcp_buffer("rmem", 6u << 20);
  return std::max<std::size_t>(64u << 20, streams * per_connection * 5 / 4);
}

// Its receive is not posted: the receiver's sockets fill, and the pages handed to the kernel
// stay unsent, so the kernel still reads the caller's buffer. The cancel must say so (the
// Communicator then waits for the send), and the message still arrives whole.
void expect_cancel_refused_while_the_kernel_reads(uint32_t streams) {
  TcpPair pair = make_pair(/*when_copied=*/true, streams);
  open_streams(pair, streams);
  const uint64_t before = pair.sender->tcp().zerocopy_sends();
  const std::size_t bytes = more_than_the_kernel_holds(streams);
  TestMessage sent = send(*pair.sender, 0, 1, bytes);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (pair.sender->tcp().zerocopy_sends() == before &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_GT(pair.sender->tcp().zerocopy_sends(), before);
  auto reason = std::make_shared<const Error>(ErrorCode::kTimeout, "cancelled by the test");
  EXPECT_FALSE(pair.sender->cancel(*sent.request, reason));
  EXPECT_FALSE(sent.request->done());
  TestMessage got = receive(*pair.receiver, 1, 1, bytes);
  ASSERT_TRUE(completes_polled(*pair.receiver, got.request, 60s));
  EXPECT_TRUE(holds_pattern(got, 1, bytes));
  ASSERT_TRUE(completes_polled(*pair.sender, sent.request, 30s));
  EXPECT_FALSE(sent.request->failed());
  exchange(pair, 2, 2u << 20);  // and the connections are in step
}

TEST(TcpZerocopy, ASendTheKernelStillReadsCannotBeWithdrawn) {
  expect_cancel_refused_while_the_kernel_reads(1);
}

TEST(TcpZerocopy, AStripedSendTheKernelStillReadsCannotBeWithdrawn) {
  expect_cancel_refused_while_the_kernel_reads(4);
}

// Rank 1 is played by hand and never reads: the pages handed to the kernel stay unsent (or
// undelivered). It then resets the connection, and the send the kernel still held fails. The
// small message is all written by then (its frame left the queue, its ticket holds the send);
// the large one is still being written.
void expect_reset_fails_held_send(std::size_t bytes) {
  const std::string token = "zerocopy-test-token";
  util::Fd silent_listener = util::listen_on(util::resolve("127.0.0.1", 0), false);
  TcpPathOptions options;
  options.rank = 0;
  options.world_size = 2;
  options.job_token = token;
  options.listen_address = util::resolve("127.0.0.1", 0);
  options.zerocopy = ZerocopyMode::kOn;
  options.zerocopy_when_copied = true;
  auto rank0 = std::make_unique<TcpRank>(0, options, nullptr);
  // Rank 1's address answers nothing: rank 0 sends on the connection rank 1 made.
  rank0->set_peer_addresses(
      {rank0->listen_address(), util::local_address_of(silent_listener.get())});
  util::Fd rank1 = testing::authenticated_as_rank1(rank0->listen_address(), token);
  ASSERT_TRUE(rank1.valid());
  // A message from rank 1 first, to a receive from anyone (a receive from rank 1 would dial
  // it): once it is in, rank 0 knows the connection as rank 1's, and sends on it.
  TestMessage hello = testing::post_guarded_receive(*rank0, kAnyPeer, kContext, 99, 8);
  testing::Bytes8 frame = testing::rank1_data_header(kContext, 99, 8);
  frame.resize(frame.size() + 8);  // the payload
  testing::send_bytes(rank1.get(), frame);
  ASSERT_TRUE(finishes_within(hello.request, 10s));
  TestMessage sent = testing::post_pattern_send(*rank0, 1, kContext, 1, bytes);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (rank0->tcp().zerocopy_sends() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_GT(rank0->tcp().zerocopy_sends(), 0u);
  std::this_thread::sleep_for(20ms);  // what the socket takes of it is written by now
  EXPECT_FALSE(sent.request->done()) << bytes;
  linger reset{1, 0};  // close() sends a reset, as a crashed host's kernel would
  ASSERT_EQ(setsockopt(rank1.get(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset), 0);
  rank1.reset();
  ASSERT_TRUE(finishes_within(sent.request, 30s)) << bytes;
  EXPECT_TRUE(sent.request->failed()) << bytes;
  silent_listener.reset();  // before rank 0: its own connection to it ends at once
  rank0.reset();
}

TEST(TcpZerocopy, APeersEndFailsTheSendsTheKernelStillHeld) {
  expect_reset_fails_held_send(kZerocopyMinBytes);
  expect_reset_fails_held_send(64u << 20);
}

}  // namespace
}  // namespace weft::transport
