// The TCP transport against what a stranger or a broken peer can send it
// (docs/RELIABILITY.md, "The transport, against any client"): strangers cost a rank next to
// nothing, however many come; a frame announcing a length no message can have, or one the rank
// cannot hold, fails that peer and not the rank, and so do pieces of striped messages where no
// weft rank sends them; running out of file descriptors does not spin the event loop.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/hand_driven_rank.h"
#include "support/sanitizers.h"
#include "support/tcp_rank.h"
#include "support/wire_tap.h"
#include "transport/frame_header.h"
#include "transport/request.h"
#include "transport/tcp/handshake.h"
#include "transport/tcp/tcp_connection.h"
#include "transport/tcp/tcp_path.h"
#include "util/hmac.h"
#include "weft/error.h"

namespace weft::transport {
namespace {

using namespace std::chrono_literals;
using testing::Bytes8;
using testing::finishes_within;
using testing::read_for;
using testing::send_bytes;

constexpr uint64_t kContext = 1;
constexpr uint64_t kTag = 7;
const std::string kToken = "the-job-token-0123456789";

std::unique_ptr<testing::TcpRank> make_rank(int rank) {
  return testing::make_tcp_rank(rank, kToken, 2, 30s);  // no test here waits for the timeout
}

struct Message {
  std::vector<char> data;
  RequestPtr request;
};

Message post(testing::TcpRank& at, Request::Kind kind, int peer, uint64_t tag, std::size_t bytes) {
  Message message{std::vector<char>(bytes, 'x'), nullptr};
  message.request = std::make_shared<Request>(kind, peer, kContext, tag, Signature{},
                                              message.data.data(), message.data.size());
  if (kind == Request::Kind::kSend) {
    at.post_send(message.request);
  } else {
    at.post_recv(message.request);
  }
  return message;
}

// Rank 1 sends rank 0 a message; empty when it arrived intact, else what went wrong.
std::string exchange(testing::TcpRank& rank0, testing::TcpRank& rank1) {
  Message received = post(rank0, Request::Kind::kRecv, 1, kTag, 4096);
  Message sent = post(rank1, Request::Kind::kSend, 0, kTag, 4096);
  if (!finishes_within(received.request, 10s)) return "the receive did not finish";
  if (received.request->failed()) return received.request->error()->what();
  if (!finishes_within(sent.request, 10s)) return "the send did not finish";
  if (sent.request->failed()) return sent.request->error()->what();
  return "";
}

std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t total_pages = 0, resident_pages = 0;
  statm >> total_pages >> resident_pages;
  return resident_pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

util::Fd authenticated_as_rank1(const util::SocketAddress& rank0, uint16_t stream = 0) {
  return testing::authenticated_as_rank1(rank0, kToken, stream);
}

Bytes8 data_header(uint64_t tag, uint64_t bytes, uint32_t stripes = 0) {
  return testing::rank1_data_header(kContext, tag, bytes, stripes);
}

// Rank 0 with a receive from rank 1 pending, and rank 1 played by hand. Rank 1's listening
// address is a socket that never answers, so rank 0's own connection to it (made when the
// receive is posted) stays in its handshake and fails nothing during the test.
class HostileRank1 : public ::testing::Test {
 protected:
  void SetUp() override {
    silent_listener_ = util::listen_on(util::resolve("127.0.0.1", 0), /*non_blocking=*/false);
    rank0_ = make_rank(0);
    rank0_->set_peer_addresses(
        {rank0_->listen_address(), util::local_address_of(silent_listener_.get())});
  }

  // Before rank 0: closing the listener resets rank 0's connection to it, so that rank 0's
  // shutdown does not wait for that handshake.
  void TearDown() override { silent_listener_.reset(); }

  // Posts the receive (of `tag`), sends rank 0 a header announcing `bytes` on an authenticated
  // connection, and returns what the receive failed with.
  std::shared_ptr<const Error> announce(uint64_t receive_tag, uint64_t bytes) {
    return announce_frame(receive_tag, 64, data_header(kTag, bytes));
  }

  // The same with `frame` (and what follows it) as rank 1's first bytes, to a receive of
  // `capacity` bytes.
  std::shared_ptr<const Error> announce_frame(uint64_t receive_tag, std::size_t capacity,
                                              const Bytes8& frame) {
    receive_ = post(*rank0_, Request::Kind::kRecv, 1, receive_tag, capacity);
    rank1_ = authenticated_as_rank1(rank0_->listen_address());
    if (!rank1_.valid()) {
      ADD_FAILURE() << "the handshake as rank 1 failed";
      return nullptr;
    }
    send_bytes(rank1_.get(), frame);
    if (!finishes_within(receive_.request, 5s)) {
      ADD_FAILURE() << "the receive from rank 1 is still pending";
      return nullptr;
    }
    if (!receive_.request->failed()) {
      ADD_FAILURE() << "the receive from rank 1 completed";
      return nullptr;
    }
    return receive_.request->error();
  }

  void expect_connection_dropped() {
    bool closed = false;
    read_for(rank1_.get(), 1 << 16, 5s, &closed);
    EXPECT_TRUE(closed) << "rank 0 kept reading the connection";
  }

  util::Fd silent_listener_;
  std::unique_ptr<testing::TcpRank> rank0_;
  util::Fd rank1_;
  Message receive_;
};

constexpr uint64_t kHugeLength = uint64_t{1} << 62;

TEST_F(HostileRank1, AFrameLongerThanAnyMessageFailsThePeerNotTheRank) {
  auto error = announce(kTag, kHugeLength);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code(), ErrorCode::kPeerFailure) << error->what();
  EXPECT_NE(error->message().find("rank 1"), std::string::npos) << error->what();
  EXPECT_NE(error->message().find(std::to_string(kHugeLength)), std::string::npos) << error->what();
  EXPECT_NE(error->message().find(std::to_string(kMaxDataPayload)), std::string::npos)
      << error->what();
  expect_connection_dropped();
}

TEST_F(HostileRank1, AnUnexpectedFrameLongerThanAnyMessageAllocatesNothingAndFailsThePeer) {
  // The receive waits for another tag: the frame would go to a pooled buffer of its length.
  auto error = announce(kTag + 1, kHugeLength);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code(), ErrorCode::kPeerFailure) << error->what();
  EXPECT_NE(error->message().find(std::to_string(kHugeLength)), std::string::npos) << error->what();
  expect_connection_dropped();
  // Later receives from it fail at once, with the same cause.
  Message later = post(*rank0_, Request::Kind::kRecv, 1, kTag, 64);
  ASSERT_TRUE(finishes_within(later.request, 1s));
  ASSERT_TRUE(later.request->failed());
  EXPECT_EQ(later.request->error()->message(), error->message());
}

// --- pieces of striped messages (transport/tcp/streams.h) ------------------------------------

Bytes8 piece_header(uint64_t offset, uint64_t bytes) {
  FrameHeader header;
  header.kind = FrameKind::kStripe;
  header.source = 1;
  header.context = offset;
  header.bytes = bytes;
  Bytes8 encoded(kFrameHeaderBytes);
  encode(header, encoded.data());
  return encoded;
}

TEST_F(HostileRank1, AMessageStripedOverConnectionsNeverOpenedFailsThePeer) {
  auto error = announce_frame(kTag, 64, data_header(kTag, 64, /*stripes=*/4));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code(), ErrorCode::kPeerFailure) << error->what();
  EXPECT_NE(error->message().find("striped across 4 connections without opening connection 1"),
            std::string::npos)
      << error->what();
  expect_connection_dropped();
}

TEST_F(HostileRank1, APieceOnTheUsualConnectionFailsThePeer) {
  auto error = announce_frame(kTag, 64, piece_header(0, 64));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code(), ErrorCode::kPeerFailure) << error->what();
  EXPECT_NE(error->message().find("which it did not open for pieces"), std::string::npos)
      << error->what();
  expect_connection_dropped();
}

TEST_F(HostileRank1, AStripeCountOverTheLimitFailsThePeer) {
  auto error = announce_frame(kTag, 64, data_header(kTag, 64, kMaxStripes + 1));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code(), ErrorCode::kPeerFailure) << error->what();
  EXPECT_NE(error->message().find("striped across " + std::to_string(kMaxStripes + 1)),
            std::string::npos)
      << error->what();
  expect_connection_dropped();
}

// A piece other than the one its message's header announced: the receive fails, and none of
// the piece is written into its buffer.
TEST_F(HostileRank1, APieceOtherThanTheOneAnnouncedFailsThePeerAndWritesNothing) {
  constexpr std::size_t kBytes = 2 * 4096;
  util::Fd stream = authenticated_as_rank1(rank0_->listen_address(), /*stream=*/1);
  ASSERT_TRUE(stream.valid());
  std::this_thread::sleep_for(100ms);               // rank 0 has taken it as rank 1's connection 1
  Bytes8 wrong = piece_header(/*offset=*/0, 4096);  // the second piece begins at 4096
  wrong.resize(wrong.size() + 4096, 'p');
  send_bytes(stream.get(), wrong);
  Bytes8 first = data_header(kTag, kBytes, /*stripes=*/2);
  first.resize(first.size() + 4096, 'f');
  auto error = announce_frame(kTag, kBytes, first);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code(), ErrorCode::kPeerFailure) << error->what();
  EXPECT_NE(error->message().find("sent a piece of 4096 bytes at offset 0 on connection 1 where "
                                  "its message's header announced 4096 at 4096"),
            std::string::npos)
      << error->what();
  for (std::size_t i = 4096; i < kBytes; ++i) ASSERT_EQ(receive_.data[i], 'x') << i;
  bool closed = false;
  read_for(stream.get(), 1 << 16, 5s, &closed);
  EXPECT_TRUE(closed) << "rank 0 kept reading the stream";
}

TEST_F(HostileRank1, AHelloForAStreamNumberOverTheLimitIsRefused) {
  util::Fd fd = testing::connect_to(rank0_->listen_address());
  ASSERT_TRUE(fd.valid());
  send_bytes(fd.get(), encode_hello({1, 2, util::fresh_nonce(), uint16_t{kMaxStripes}}));
  bool closed = false;
  Bytes8 answer = read_for(fd.get(), kChallengeBytes, 5s, &closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(answer.empty()) << "rank 0 answered the hello";
}

TEST_F(HostileRank1, AnUnexpectedFrameTheRankCannotHoldFailsThePeer) {
  std::ifstream policy("/proc/sys/vm/overcommit_memory");
  int overcommit = 0;
  policy >> overcommit;
  if (overcommit == 1) GTEST_SKIP() << "vm.overcommit_memory=1: any allocation succeeds";
  // ASan's and TSan's operator new end the process on an allocation they cannot make (even with
  // allocator_may_return_null=1) instead of throwing std::bad_alloc.
  if (testing::kSanitized) GTEST_SKIP() << "sanitizer: operator new does not throw bad_alloc";
  // Within the limit, but more than any machine holds (64 TiB).
  constexpr uint64_t kUnholdable = uint64_t{1} << 46;
  auto error = announce(kTag + 1, kUnholdable);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code(), ErrorCode::kPeerFailure) << error->what();
  EXPECT_NE(error->message().find(std::to_string(kUnholdable)), std::string::npos) << error->what();
  EXPECT_NE(error->message().find("could not allocate"), std::string::npos) << error->what();
  expect_connection_dropped();
}

// One stranger: connects, and sends nothing, garbage, or a hello it never follows up, then
// leaves. Those that send garbage are waited for until rank 0 closes on them, so that rank 0
// keeps up with the stream.
void visit_as_stranger(const util::SocketAddress& rank, int kind) {
  util::Fd fd = testing::connect_to(rank);
  ASSERT_TRUE(fd.valid());
  if (kind == 1) {
    send_bytes(fd.get(), Bytes8(4096, 0x5a));
    bool closed = false;
    read_for(fd.get(), 1 << 16, 5s, &closed);
    ASSERT_TRUE(closed) << "rank 0 kept a stranger's garbage connection open";
  } else if (kind == 2) {
    send_bytes(fd.get(), encode_hello({1, 2, util::fresh_nonce()}));
    read_for(fd.get(), kChallengeBytes, 5s);
  }
}

TEST(TcpStrangers, ThousandsOfStrangersLeaveARankAsSmallAsTheyFoundIt) {
  auto rank0 = make_rank(0);
  auto rank1 = make_rank(1);
  rank0->set_peer_addresses({rank0->listen_address(), rank1->listen_address()});
  rank1->set_peer_addresses({rank0->listen_address(), rank1->listen_address()});
  ASSERT_EQ(exchange(*rank0, *rank1), "");  // the real connection and its buffers exist
  const std::size_t before = resident_bytes();

  constexpr int kStrangers = 2000;
  for (int i = 0; i < kStrangers; ++i) {
    visit_as_stranger(rank0->listen_address(), i % 3);
    if (HasFatalFailure()) return;
  }
  // Still serves the real ranks, in both directions.
  EXPECT_EQ(exchange(*rank0, *rank1), "");
  EXPECT_EQ(exchange(*rank0, *rank1), "");
  std::this_thread::sleep_for(500ms);  // the last strangers' ends are seen
  const std::size_t after = resident_bytes();
  // Each stranger used to keep a 256 KiB buffer: 500 MB for these.
  EXPECT_LT(after, before + (40u << 20)) << "resident size grew by " << ((after - before) >> 20)
                                         << " MiB for " << kStrangers << " strangers";
}

std::chrono::microseconds cpu_time() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto us = [](const timeval& t) {
    return std::chrono::seconds(t.tv_sec) + std::chrono::microseconds(t.tv_usec);
  };
  return std::chrono::duration_cast<std::chrono::microseconds>(us(usage.ru_utime) +
                                                               us(usage.ru_stime));
}

// Exit codes of the child below.
constexpr int kChildOk = 0;
constexpr int kChildSpun = 10;
constexpr int kChildNotServed = 11;
constexpr int kChildSetupFailed = 12;

int setup_failed(const char* step) {
  std::fprintf(stderr, "child: %s failed: %s\n", step, std::strerror(errno));
  return kChildSetupFailed;
}

// In a child process: rank 0 listens while the process has no descriptor left, and connections
// wait in its backlog. Measures the CPU the process uses meanwhile, then frees descriptors and
// checks that a real rank gets through.
int run_out_of_descriptors() {
  auto rank0 = make_rank(0);
  rlimit old_limit{};
  if (getrlimit(RLIMIT_NOFILE, &old_limit) != 0) return setup_failed("getrlimit");
  rlimit low = old_limit;
  low.rlim_cur = 256;
  if (setrlimit(RLIMIT_NOFILE, &low) != 0) return setup_failed("setrlimit");
  // The clients' sockets exist before the descriptors run out: a descriptor freed for one later
  // could be taken first by the event loop's accept of the connection before it.
  constexpr int kWaiting = 3;
  std::vector<util::Fd> waiting;
  for (int i = 0; i < kWaiting; ++i) {
    waiting.emplace_back(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!waiting.back().valid()) return setup_failed("socket");
  }
  std::vector<util::Fd> filler;
  for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) filler.emplace_back(fd);
  auto address = rank0->listen_address();
  for (const util::Fd& client : waiting) {
    if (::connect(client.get(), address.raw(), address.length) != 0) {
      return setup_failed("connect");
    }
  }
  std::this_thread::sleep_for(50ms);
  auto started = cpu_time();
  std::this_thread::sleep_for(500ms);
  auto used = cpu_time() - started;
  filler.clear();
  waiting.clear();
  setrlimit(RLIMIT_NOFILE, &old_limit);
  if (used > 100ms) {
    std::fprintf(stderr, "the process used %lld us of CPU in 500 ms without descriptors\n",
                 static_cast<long long>(used.count()));
    return kChildSpun;
  }
  auto rank1 = make_rank(1);
  rank0->set_peer_addresses({rank0->listen_address(), rank1->listen_address()});
  rank1->set_peer_addresses({rank0->listen_address(), rank1->listen_address()});
  if (std::string failure = exchange(*rank0, *rank1); !failure.empty()) {
    std::fprintf(stderr, "after descriptors were freed: %s\n", failure.c_str());
    return kChildNotServed;
  }
  return kChildOk;
}

TEST(TcpStrangers, RunningOutOfDescriptorsDoesNotSpinTheEventLoop) {
  std::fflush(nullptr);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int code = kChildSetupFailed;
    try {
      code = run_out_of_descriptors();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
    }
    std::fflush(nullptr);
    _exit(code);
  }
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      FAIL() << "the child did not finish within 60 s";
    }
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_NE(WEXITSTATUS(status), kChildSpun) << "the event loop spun on the listener";
  EXPECT_NE(WEXITSTATUS(status), kChildNotServed) << "no rank got through afterwards";
  EXPECT_EQ(WEXITSTATUS(status), kChildOk);
}

}  // namespace
}  // namespace weft::transport
