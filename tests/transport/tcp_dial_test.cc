// A rank on TCP given several addresses for a peer (transport/tcp/candidate_dial.h), on
// loopback: an address that refuses, one that swallows connects, and one where another rank of
// the job answers are each passed over for the next; the first that passes the handshake is the
// peer's address, logged at INFO; when none works, the error names every address and why.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "support/eventually.h"
#include "support/free_port.h"
#include "support/tcp_rank.h"
#include "transport/request.h"
#include "transport/tcp/streams.h"
#include "transport/tcp/tcp_path.h"
#include "weft/error.h"
#include "weft/log.h"

namespace weft::transport {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::finishes_within;

constexpr uint64_t kContext = 1;
constexpr uint64_t kTag = 3;
const std::string kToken = "tcp-dial-test-token";

// Collects weft's INFO lines while it lives.
class LogCapture {
 public:
  LogCapture() : previous_(log_level()) {
    set_log_level(LogLevel::kInfo);
    set_log_sink([this](LogLevel, std::string_view, std::string_view line) {
      std::lock_guard lock(mutex_);
      lines_.emplace_back(line);
    });
  }
  ~LogCapture() {
    set_log_sink(nullptr);
    set_log_level(previous_);
  }
  // The first line holding `text`, or "".
  std::string line_with(const std::string& text) {
    std::lock_guard lock(mutex_);
    for (const std::string& line : lines_) {
      if (line.find(text) != std::string::npos) return line;
    }
    return "";
  }

 private:
  LogLevel previous_;
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

struct Exchange {
  std::vector<char> sent = std::vector<char>(64, 'x');
  std::vector<char> received = std::vector<char>(64, 0);
  RequestPtr send;
  RequestPtr recv;
};

// Rank `from` sends 64 bytes to rank `to`, which receives them. The receive is posted once the
// send is out: a receive dials too, and a dial of `to` that reached `from` first would end
// `from`'s tour of the addresses (a dial that has not proved itself gives way).
Exchange exchange(testing::TcpRank& from, testing::TcpRank& to) {
  Exchange ex;
  ex.send = std::make_shared<Request>(Request::Kind::kSend, to.rank(), kContext, kTag, Signature{},
                                      ex.sent.data(), ex.sent.size());
  from.post_send(ex.send);
  finishes_within(ex.send, 15s);
  ex.recv = std::make_shared<Request>(Request::Kind::kRecv, from.rank(), kContext, kTag,
                                      Signature{}, ex.received.data(), ex.received.size());
  to.post_recv(ex.recv);
  return ex;
}

std::unique_ptr<testing::TcpRank> make_rank(int rank, int world = 2) {
  return testing::make_tcp_rank(rank, kToken, world, 10s);
}

util::SocketAddress nothing_listens() { return util::resolve("127.0.0.1", testing::free_port()); }

void expect_delivered(const Exchange& ex) {
  ASSERT_TRUE(finishes_within(ex.send, 15s));
  ASSERT_FALSE(ex.send->failed()) << ex.send->error()->what();
  ASSERT_TRUE(finishes_within(ex.recv, 15s));
  ASSERT_FALSE(ex.recv->failed()) << ex.recv->error()->what();
  EXPECT_EQ(ex.received, ex.sent);
}

TEST(TcpDial, ARefusedAddressIsPassedOverAndTheOneThatWorksIsLogged) {
  LogCapture log;
  auto rank0 = make_rank(0);
  auto rank1 = make_rank(1);
  util::SocketAddress refused = nothing_listens();
  rank0->set_peer_candidates({{rank0->listen_address()}, {refused, rank1->listen_address()}});
  rank1->set_peer_addresses({rank0->listen_address(), rank1->listen_address()});
  auto started = Clock::now();
  expect_delivered(exchange(*rank0, *rank1));
  EXPECT_LT(Clock::now() - started, 2s) << "a refused address should cost no wait";
  std::string chosen = rank1->listen_address().to_string();
  EXPECT_EQ(rank0->peer_address(1), chosen);
  std::string line = log.line_with("rank 0 reaches rank 1 at " + chosen);
  EXPECT_NE(line.find("(tried " + refused.to_string() + ": refused)"), std::string::npos)
      << "log: '" << line << "'";
}

TEST(TcpDial, AnAddressThatSwallowsConnectsTimesOutWithinItsBudget) {
  // A listener whose accept queue is full drops new SYNs, as a dead route does.
  util::Fd swallower = util::listen_on(util::resolve("127.0.0.1", 0), false, /*backlog=*/0);
  util::SocketAddress swallowing = util::local_address_of(swallower.get());
  util::Fd filler = util::connect_with_deadline(swallowing, Clock::now() + 2s);
  ASSERT_TRUE(filler.valid());
  try {
    util::Fd probe = util::connect_with_deadline(swallowing, Clock::now() + 300ms);
    if (probe.valid()) GTEST_SKIP() << "this kernel accepts connects beyond a full accept queue";
  } catch (const Error&) {  // timed out: the SYN was dropped, as wanted
  }

  LogCapture log;
  auto rank0 = make_rank(0);
  auto rank1 = make_rank(1);
  rank0->set_peer_candidates({{rank0->listen_address()}, {swallowing, rank1->listen_address()}});
  rank1->set_peer_addresses({rank0->listen_address(), rank1->listen_address()});
  auto started = Clock::now();
  expect_delivered(exchange(*rank0, *rank1));
  auto took = Clock::now() - started;
  EXPECT_GE(took, CandidateDial::kConnectBudget - 100ms);
  EXPECT_LT(took, CandidateDial::kConnectBudget + 3s);
  std::string line =
      log.line_with("rank 0 reaches rank 1 at " + rank1->listen_address().to_string());
  EXPECT_NE(line.find(swallowing.to_string() + ": timed out after 2000 ms"), std::string::npos)
      << "log: '" << line << "'";
}

TEST(TcpDial, AnotherRankOfTheJobAtTheAddressIsPassedOver) {
  LogCapture log;
  auto rank0 = make_rank(0, 3);
  auto rank1 = make_rank(1, 3);
  auto rank2 = make_rank(2, 3);
  std::vector<util::SocketAddress> listening = {rank0->listen_address(), rank1->listen_address(),
                                                rank2->listen_address()};
  rank0->set_peer_candidates({{listening[0]}, {listening[2], listening[1]}, {listening[2]}});
  rank1->set_peer_addresses(listening);
  rank2->set_peer_addresses(listening);
  expect_delivered(exchange(*rank0, *rank1));
  EXPECT_EQ(rank0->peer_address(1), listening[1].to_string());
  std::string line = log.line_with("rank 0 reaches rank 1 at " + listening[1].to_string());
  EXPECT_NE(line.find(listening[2].to_string() + ": failed the handshake (it answered as rank 2)"),
            std::string::npos)
      << "log: '" << line << "'";
  // Rank 2 is still fine to talk to.
  expect_delivered(exchange(*rank0, *rank2));
}

// A peer whose connection came before we needed it (we never dial it then) is named by its
// address on the host that connection came from, not by the list of its candidates.
TEST(TcpDial, APeerThatDialledUsIsNamedByItsAddressOnTheHostItCameFrom) {
  auto rank0 = make_rank(0);
  auto rank1 = make_rank(1);
  util::SocketAddress elsewhere = util::resolve("::1", testing::free_port());
  std::string listening = rank1->listen_address().to_string();
  rank0->set_peer_candidates({{rank0->listen_address()}, {elsewhere, rank1->listen_address()}});
  rank1->set_peer_addresses({rank0->listen_address(), rank1->listen_address()});
  EXPECT_EQ(rank0->peer_address(1), elsewhere.to_string() + " or " + listening);
  expect_delivered(exchange(*rank1, *rank0));
  EXPECT_EQ(rank0->peer_address(1), listening);
}

// A peer whose connection came before we needed it is never looked up (we send on its
// connection): it is named by the host it came from.
TEST(TcpDial, APeerNeverLookedUpIsNamedByTheHostItsConnectionCameFrom) {
  auto rank0 = make_rank(0);
  auto rank1 = make_rank(1);
  int lookups = 0;
  rank0->tcp().set_peer_lookup([&](int) {
    ++lookups;
    return std::vector<util::SocketAddress>{rank1->listen_address()};
  });
  rank1->set_peer_addresses({rank0->listen_address(), rank1->listen_address()});
  EXPECT_EQ(rank0->peer_address(1), "");
  Exchange ex;
  ex.send = std::make_shared<Request>(Request::Kind::kSend, 0, kContext, kTag, Signature{},
                                      ex.sent.data(), ex.sent.size());
  rank1->post_send(ex.send);
  ASSERT_TRUE(finishes_within(ex.send, 15s));
  // Rank 0 acks the proof before it takes the connection as rank 1's: a receive posted in
  // between would look rank 1 up and dial it. Taken, it is one rank 1's messages come on.
  ASSERT_TRUE(testing::eventually([&] { return rank0->tcp().inbound_buffer_bytes(1) > 0; }, 15s,
                                  std::chrono::milliseconds(1)));
  ex.recv = std::make_shared<Request>(Request::Kind::kRecv, 1, kContext, kTag, Signature{},
                                      ex.received.data(), ex.received.size());
  rank0->post_recv(ex.recv);
  expect_delivered(ex);
  EXPECT_EQ(lookups, 0);
  EXPECT_EQ(rank0->peer_address(1), rank1->listen_address().host());
}

// Looked up after its connection came (here to open extra streams for a large message): named
// by its candidate on the host that connection came from, not by every candidate.
TEST(TcpDial, APeerLookedUpAfterItsConnectionCameIsNamedByItsAddressOnThatHost) {
  transport::TcpPathOptions options;
  options.rank = 0;
  options.world_size = 2;
  options.job_token = kToken;
  options.listen_address = util::resolve("127.0.0.1", 0);
  options.streams = 2;
  auto rank0 = std::make_unique<testing::TcpRank>(0, options, nullptr);
  auto rank1 = make_rank(1);
  util::SocketAddress elsewhere = util::resolve("::1", testing::free_port());
  rank0->tcp().set_peer_lookup([&](int) {
    return std::vector<util::SocketAddress>{elsewhere, rank1->listen_address()};
  });
  rank1->set_peer_addresses({rank0->listen_address(), rank1->listen_address()});
  expect_delivered(exchange(*rank1, *rank0));
  std::vector<char> large(2 * transport::kSmallestStripe, 'x');
  std::vector<char> got(large.size());
  auto recv = std::make_shared<Request>(Request::Kind::kRecv, 0, kContext, kTag + 1, Signature{},
                                        got.data(), got.size());
  rank1->post_recv(recv);
  auto send = std::make_shared<Request>(Request::Kind::kSend, 1, kContext, kTag + 1, Signature{},
                                        large.data(), large.size());
  rank0->post_send(send);
  ASSERT_TRUE(finishes_within(send, 15s));
  ASSERT_TRUE(finishes_within(recv, 15s));
  ASSERT_FALSE(recv->failed()) << recv->error()->what();
  EXPECT_EQ(got, large);
  EXPECT_EQ(rank0->peer_address(1), rank1->listen_address().to_string());
}

TEST(TcpDial, WhenNoAddressWorksTheErrorNamesEachAndWhy) {
  auto rank0 = make_rank(0);
  util::SocketAddress first = nothing_listens();
  util::SocketAddress second = util::resolve("::1", first.port());
  rank0->set_peer_candidates({{rank0->listen_address()}, {first, second}});
  EXPECT_EQ(rank0->peer_address(1), first.to_string() + " or " + second.to_string());
  std::vector<char> data(8);
  auto send = std::make_shared<Request>(Request::Kind::kSend, 1, kContext, kTag, Signature{},
                                        data.data(), data.size());
  rank0->post_send(send);
  ASSERT_TRUE(finishes_within(send, 15s));
  ASSERT_TRUE(send->failed());
  const Error& error = *send->error();
  EXPECT_EQ(error.code(), ErrorCode::kPeerFailure);
  EXPECT_NE(error.message().find("rank 1 could not be reached at any of its addresses (" +
                                 first.to_string() + ": refused, " + second.to_string() + ": "),
            std::string::npos)
      << error.what();
}

TEST(TcpDial, OneRefusedAddressKeepsItsPlainMessage) {
  auto rank0 = make_rank(0);
  util::SocketAddress refused = nothing_listens();
  rank0->set_peer_addresses({rank0->listen_address(), refused});
  std::vector<char> data(8);
  auto send = std::make_shared<Request>(Request::Kind::kSend, 1, kContext, kTag, Signature{},
                                        data.data(), data.size());
  rank0->post_send(send);
  ASSERT_TRUE(finishes_within(send, 15s));
  ASSERT_TRUE(send->failed());
  EXPECT_NE(
      send->error()->message().find("rank 1 (" + refused.to_string() + ") refused the connection"),
      std::string::npos)
      << send->error()->what();
}

}  // namespace
}  // namespace weft::transport
