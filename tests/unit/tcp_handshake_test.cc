// The TCP transport's handshake (transport/tcp/handshake.h): both ends prove they know the job
// token, the token never crosses the wire, and strangers, impostors and replays are refused
// on both sides, with nothing delivered to them or from them.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/tcp_rank.h"
#include "support/wire_tap.h"
#include "transport/request.h"
#include "transport/tcp/handshake.h"
#include "transport/tcp/tcp_path.h"
#include "util/hmac.h"
#include "weft/error.h"

namespace weft::transport {
namespace {

using namespace std::chrono_literals;
using testing::Bytes8;
using testing::contains;
using testing::finishes_within;
using testing::read_for;
using testing::send_bytes;
using testing::WireTap;

constexpr uint64_t kContext = 1;
constexpr uint64_t kTag = 7;
// Recognisable in any capture: the payload every test sends.
const std::string kPayload = "PAYLOAD-only-for-rank-0-PAYLOAD";

std::unique_ptr<testing::TcpRank> make_rank(int rank, const std::string& token, int world = 2) {
  return testing::make_tcp_rank(rank, token, world, 3s);
}

struct Message {
  std::vector<char> data;
  RequestPtr request;
};

Message send_payload(testing::TcpRank& from, int to) {
  Message message{std::vector<char>(kPayload.begin(), kPayload.end()), nullptr};
  message.request = std::make_shared<Request>(Request::Kind::kSend, to, kContext, kTag, Signature{},
                                              message.data.data(), message.data.size());
  from.post_send(message.request);
  return message;
}

Message receive_payload(testing::TcpRank& at, int from = kAnyPeer) {
  Message message{std::vector<char>(kPayload.size()), nullptr};
  message.request =
      std::make_shared<Request>(Request::Kind::kRecv, from, kContext, kTag, Signature{},
                                message.data.data(), message.data.size());
  at.post_recv(message.request);
  return message;
}

std::string text_of(const Message& message) {
  return std::string(message.data.begin(), message.data.end());
}

TEST(TcpHandshake, RanksWithTheSameTokenConnectAndTheTokenNeverCrossesTheWire) {
  const std::string token = "the-right-token-0123456789";
  auto rank0 = make_rank(0, token);
  auto rank1 = make_rank(1, token);
  WireTap tap(rank0->listen_address());
  rank0->set_peer_addresses({rank0->listen_address(), rank1->listen_address()});
  rank1->set_peer_addresses({tap.address(), rank1->listen_address()});

  Message received = receive_payload(*rank0);
  Message sent = send_payload(*rank1, 0);
  ASSERT_TRUE(finishes_within(received.request, 10s));
  ASSERT_FALSE(received.request->failed()) << received.request->error()->what();
  EXPECT_EQ(text_of(received), kPayload);
  EXPECT_EQ(received.request->source, 1);
  ASSERT_TRUE(finishes_within(sent.request, 10s));
  EXPECT_FALSE(sent.request->failed());

  // The connection went through the tap: the payload crossed it, the token did not.
  EXPECT_TRUE(contains(tap.to_target(), kPayload));
  EXPECT_FALSE(contains(tap.to_target(), token));
  EXPECT_FALSE(contains(tap.from_target(), token));
  rank1.reset();  // before the tap: its goodbye goes through it
  rank0.reset();
}

TEST(TcpHandshake, RanksWithDifferentTokensRefuseEachOtherAndNeitherTokenLeaks) {
  auto rank0 = make_rank(0, "token-of-job-a");
  auto rank1 = make_rank(1, "token-of-job-b");
  WireTap tap(rank0->listen_address());
  rank0->set_peer_addresses({rank0->listen_address(), rank1->listen_address()});
  rank1->set_peer_addresses({tap.address(), rank1->listen_address()});

  Message received = receive_payload(*rank0);
  Message sent = send_payload(*rank1, 0);
  ASSERT_TRUE(finishes_within(sent.request, 10s)) << "the send was neither refused nor done";
  ASSERT_TRUE(sent.request->failed());
  EXPECT_EQ(sent.request->error()->code(), ErrorCode::kUnauthorized);
  EXPECT_NE(sent.request->error()->message().find("job token mismatch"), std::string::npos)
      << sent.request->error()->message();
  // Rank 0 took nothing from the stranger.
  EXPECT_FALSE(finishes_within(received.request, 500ms));
  EXPECT_FALSE(contains(tap.to_target(), kPayload));
  EXPECT_FALSE(contains(tap.to_target(), "token-of-job-b"));
  EXPECT_FALSE(contains(tap.from_target(), "token-of-job-a"));

  // The other way round too: rank 0 does not talk to rank 1 either.
  Message back = send_payload(*rank0, 1);
  ASSERT_TRUE(finishes_within(back.request, 10s));
  ASSERT_TRUE(back.request->failed());
  EXPECT_EQ(back.request->error()->code(), ErrorCode::kUnauthorized);
}

// A listener posing as rank 1 that does not know the token: whatever it answers, rank 0 never
// sends it a byte of the payload and fails the send as unauthorized.
void expect_impostor_refused(const std::function<Bytes8(const Bytes8& hello)>& answer) {
  auto rank0 = make_rank(0, "the-real-token");
  util::Fd listener = util::listen_on(util::resolve("127.0.0.1", 0), /*non_blocking=*/false);
  util::SocketAddress impostor = util::local_address_of(listener.get());
  rank0->set_peer_addresses({rank0->listen_address(), impostor});

  Message sent = send_payload(*rank0, 1);
  util::Fd connection(::accept(listener.get(), nullptr, nullptr));
  ASSERT_TRUE(connection.valid());
  Bytes8 hello = read_for(connection.get(), kHelloBytes, 5s);
  send_bytes(connection.get(), answer(hello));
  bool closed = false;
  Bytes8 after = read_for(connection.get(), 1 << 16, 3s, &closed);
  EXPECT_TRUE(closed) << "rank 0 kept the impostor's connection open";
  EXPECT_FALSE(contains(after, kPayload)) << "rank 0 sent its payload to an impostor";
  ASSERT_TRUE(finishes_within(sent.request, 5s));
  ASSERT_TRUE(sent.request->failed());
  EXPECT_EQ(sent.request->error()->code(), ErrorCode::kUnauthorized)
      << sent.request->error()->what();
}

TEST(TcpHandshake, AListenerThatAnswersOkWithoutProofGetsNothing) {
  // What an accepting rank of the old protocol said: "ok, I am rank 1".
  expect_impostor_refused([](const Bytes8&) { return encode_ack({HandshakeStatus::kOk, 1}); });
}

TEST(TcpHandshake, AListenerWithAForgedProofGetsNothing) {
  expect_impostor_refused([](const Bytes8&) {
    Challenge forged{HandshakeStatus::kOk, 1, util::fresh_nonce(), {}};
    forged.mac = util::hmac_sha256("a-guessed-token", {1, 2, 3});
    return encode_challenge(forged);
  });
}

TEST(TcpHandshake, AListenerAnsweringGarbageGetsNothing) {
  expect_impostor_refused([](const Bytes8&) { return Bytes8(200, 0x5a); });
}

TEST(TcpHandshake, AChallengeRecordedFromAnEarlierConnectionIsRefused) {
  const std::string token = "the-real-token";
  // A real exchange between rank 0 and rank 1, recorded.
  Bytes8 recorded_challenge;
  {
    auto rank0 = make_rank(0, token);
    auto rank1 = make_rank(1, token);
    WireTap tap(rank1->listen_address());
    rank0->set_peer_addresses({rank0->listen_address(), tap.address()});
    rank1->set_peer_addresses({rank0->listen_address(), rank1->listen_address()});
    Message received = receive_payload(*rank1);  // from anyone: rank 1 connects to nobody
    Message sent = send_payload(*rank0, 1);
    ASSERT_TRUE(finishes_within(received.request, 10s));
    ASSERT_FALSE(received.request->failed());
    Bytes8 answer = tap.from_target();
    ASSERT_GE(answer.size(), kChallengeBytes);
    recorded_challenge.assign(answer.begin(), answer.begin() + kChallengeBytes);
    rank0.reset();  // before the tap: its goodbye goes through it
    rank1.reset();
  }
  // An impostor replays rank 1's challenge to a new connection of a rank 0 with the same
  // token: its nonce is not the one rank 0 chose this time.
  expect_impostor_refused([&](const Bytes8&) { return recorded_challenge; });
}

TEST(TcpHandshake, AHelloAndProofRecordedFromAnEarlierConnectionAreRefused) {
  const std::string token = "the-real-token";
  auto rank0 = make_rank(0, token);
  Bytes8 recorded;
  {
    auto rank1 = make_rank(1, token);
    WireTap tap(rank0->listen_address());
    rank0->set_peer_addresses({rank0->listen_address(), rank1->listen_address()});
    rank1->set_peer_addresses({tap.address(), rank1->listen_address()});
    Message received = receive_payload(*rank0);
    Message sent = send_payload(*rank1, 0);
    ASSERT_TRUE(finishes_within(received.request, 10s));
    ASSERT_FALSE(received.request->failed());
    ASSERT_TRUE(finishes_within(sent.request, 10s));
    recorded = tap.to_target();
    rank1.reset();  // before the tap: its goodbye goes through it
  }
  ASSERT_GE(recorded.size(), kHelloBytes + kProofBytes);

  // Replayed to rank 0, step by step as the real rank 1 sent it: hello, then the rest.
  Message again = receive_payload(*rank0);
  util::Fd replay = testing::connect_to(rank0->listen_address());
  ASSERT_TRUE(replay.valid());
  send_bytes(replay.get(), Bytes8(recorded.begin(), recorded.begin() + kHelloBytes));
  Bytes8 challenge = read_for(replay.get(), kChallengeBytes, 5s);
  ASSERT_EQ(challenge.size(), kChallengeBytes) << "rank 0 did not challenge the replay";
  send_bytes(replay.get(),
             Bytes8(recorded.begin() + kHelloBytes, recorded.begin() + kHelloBytes + kProofBytes));
  bool closed = false;
  Bytes8 answer = read_for(replay.get(), 1 << 16, 5s, &closed);
  EXPECT_TRUE(closed) << "rank 0 kept the replayed connection open";
  std::optional<Ack> ack = parse_ack(answer.data(), answer.size());
  ASSERT_TRUE(ack.has_value()) << "rank 0 sent " << answer.size() << " bytes, not an ack";
  EXPECT_EQ(ack->status, HandshakeStatus::kBadToken);
  // The replayed message was not delivered.
  EXPECT_FALSE(finishes_within(again.request, 500ms));
}

TEST(TcpHandshake, AConnectionThatNeverProvesItselfIsDroppedAfterTheTimeout) {
  auto rank0 = make_rank(0, "the-real-token");
  rank0->set_peer_addresses({rank0->listen_address(), util::resolve("127.0.0.1", 1)});
  util::Fd stranger = testing::connect_to(rank0->listen_address());
  ASSERT_TRUE(stranger.valid());
  Hello hello{1, 2, util::fresh_nonce()};
  send_bytes(stranger.get(), encode_hello(hello));
  Bytes8 challenge = read_for(stranger.get(), kChallengeBytes, 5s);
  ASSERT_EQ(challenge.size(), kChallengeBytes);
  // No proof: the handshake timeout (3 s here) closes it.
  bool closed = false;
  auto started = std::chrono::steady_clock::now();
  read_for(stranger.get(), 1 << 16, 10s, &closed);
  EXPECT_TRUE(closed);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 8s);
}

}  // namespace
}  // namespace weft::transport
