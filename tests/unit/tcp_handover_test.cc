// When both ranks of a pair dial each other at once, a dial that has not proved itself yet, and a
// higher rank's dial that has carried no message yet, hand their queue over to the peer's
// connection, so that one connection carries both directions: the order of its messages must
// hold across the hand-over, the spare dial must fail nothing, and the pair must still part
// gracefully. A dial that becomes ready
// while the lower rank's connection awaits its proof waits for that proof (proof_wait.h), and
// no longer than it should.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/eventually.h"
#include "support/tcp_pair.h"
#include "support/tcp_rank.h"
#include "support/wire_tap.h"
#include "transport/request.h"
#include "transport/tcp/handshake.h"
#include "transport/tcp/proof_wait.h"
#include "util/hmac.h"
#include "util/socket.h"

namespace weft {
namespace {

using namespace std::chrono_literals;
using testing::holds_pattern;
using testing::post_guarded_receive;
using testing::post_pattern_send;
using testing::TcpRank;
using testing::TestMessage;
using transport::TcpPathOptions;

constexpr uint64_t kContext = 7;

transport::TcpPathOptions options_with_timeout(std::chrono::milliseconds handshake_timeout) {
  TcpPathOptions options;
  options.job_token = "handover-test";
  options.world_size = 2;
  options.listen_address = util::resolve("127.0.0.1", 0);
  options.handshake_timeout = handshake_timeout;
  return options;
}

// `count` messages of sizes 1, 2, 3, ... bytes, all with one tag: the receives, posted in order,
// match them in the order they were sent only if the connection kept it.
std::vector<TestMessage> send_in_order(TcpRank& from, int to, uint64_t tag, int count) {
  std::vector<TestMessage> sends;
  for (int i = 0; i < count; ++i) {
    sends.push_back(post_pattern_send(from, to, kContext, tag, static_cast<std::size_t>(i) + 1));
  }
  return sends;
}

// Receives for send_in_order's messages: a message of another size in one of them fails it
// (a size mismatch).
std::vector<TestMessage> receive_in_order(TcpRank& at, int from, uint64_t tag, int count) {
  std::vector<TestMessage> receives;
  for (int i = 0; i < count; ++i) {
    receives.push_back(
        post_guarded_receive(at, from, kContext, tag, static_cast<std::size_t>(i) + 1));
  }
  return receives;
}

void expect_received_in_order(TcpRank& at, const std::vector<TestMessage>& receives, uint64_t tag) {
  for (std::size_t i = 0; i < receives.size(); ++i) {
    ASSERT_TRUE(testing::completes_polled(at, receives[i].request, 10s)) << "receive " << i;
    EXPECT_TRUE(holds_pattern(receives[i], tag, i + 1)) << "receive " << i << " out of order";
  }
}

void expect_sent(TcpRank& at, const std::vector<TestMessage>& sends) {
  for (std::size_t i = 0; i < sends.size(); ++i) {
    ASSERT_TRUE(testing::completes_polled(at, sends[i].request, 10s)) << "send " << i;
    EXPECT_FALSE(sends[i].request->failed()) << sends[i].request->error()->what();
  }
}

// `leaving` shuts down while `staying` waits for a message from it: the wait fails with a
// shutdown, not a death, so a goodbye came on every connection between them.
void expect_parts_gracefully(TcpRank& staying, std::unique_ptr<TcpRank>& leaving) {
  TestMessage never = post_guarded_receive(staying, 1, kContext, 5, 8);
  leaving.reset();
  ASSERT_TRUE(testing::finishes_within(never.request, 10s));
  ASSERT_TRUE(never.request->failed());
  EXPECT_NE(never.request->error()->message().find("has shut down"), std::string::npos)
      << never.request->error()->what();
}

// Two ranks, one of which reaches the other first at a socket that never answers, so its dial
// hangs in the handshake until kHandshakeTimeout.
class SilentAddressPair : public ::testing::Test {
 protected:
  static constexpr auto kHandshakeTimeout = 400ms;

  // `hanging`: the rank whose dial meets the silent address first; `then_real`: whether it
  // tries the other rank's real address after it.
  void make_ranks(int hanging, bool then_real) {
    silent_listener_ = util::listen_on(util::resolve("127.0.0.1", 0), /*non_blocking=*/false);
    TcpPathOptions options = options_with_timeout(kHandshakeTimeout);
    options.rank = 0;
    rank0_ = std::make_unique<TcpRank>(0, options, nullptr);
    options.rank = 1;
    rank1_ = std::make_unique<TcpRank>(1, options, nullptr);
    std::vector<std::vector<util::SocketAddress>> candidates{{rank0_->listen_address()},
                                                             {rank1_->listen_address()}};
    std::vector<util::SocketAddress>& other = candidates[1 - hanging];
    other.insert(other.begin(), util::local_address_of(silent_listener_.get()));
    if (!then_real) other.pop_back();
    rank0_->set_peer_candidates(candidates);
    rank1_->set_peer_candidates(candidates);
  }

  void TearDown() override {
    rank1_.reset();
    rank0_.reset();
    silent_listener_.reset();
  }

  util::Fd silent_listener_;
  std::unique_ptr<TcpRank> rank0_;
  std::unique_ptr<TcpRank> rank1_;
};

// Rank 1's only address for rank 0 is a socket that never answers, so its dial hangs in the
// handshake while rank 0's dial completes: the hand-over happens every time, and once the
// handshake times out no address is left to try (which, but for the hand-over, fails rank 0).
class TcpHandover : public SilentAddressPair {
 protected:
  void SetUp() override { make_ranks(/*hanging=*/1, /*then_real=*/false); }
};

TEST_F(TcpHandover, MessagesQueuedOnTheHigherRanksDialArriveInOrderOnTheLowerRanksConnection) {
  constexpr int kQueued = 20;
  constexpr uint64_t kTag = 3;
  // Queued on rank 1's hanging dial.
  std::vector<TestMessage> early = send_in_order(*rank1_, 0, kTag, kQueued);
  std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(rank1_->tcp().sends_on_own_dial(0));
  // Rank 0 dials; once its proof is in, rank 1 sends there.
  std::vector<TestMessage> receives = receive_in_order(*rank0_, 1, kTag, kQueued);
  std::vector<TestMessage> more = receive_in_order(*rank0_, 1, kTag, kQueued);
  receives.insert(receives.end(), std::make_move_iterator(more.begin()),
                  std::make_move_iterator(more.end()));
  TestMessage hello = post_pattern_send(*rank0_, 1, kContext, 9, 5);
  TestMessage hello_in = post_guarded_receive(*rank1_, 0, kContext, 9, 5);
  ASSERT_TRUE(testing::completes_polled(*rank1_, hello_in.request, 10s));
  EXPECT_TRUE(holds_pattern(hello_in, 9, 5));
  EXPECT_FALSE(rank1_->tcp().sends_on_own_dial(0));
  EXPECT_TRUE(rank0_->tcp().sends_on_own_dial(1));
  std::vector<TestMessage> late = send_in_order(*rank1_, 0, kTag, kQueued);
  // Sizes 1..20 and then 1..20 again, all in one order.
  for (int i = 0; i < 2 * kQueued; ++i) {
    ASSERT_TRUE(testing::completes_polled(*rank0_, receives[i].request, 10s)) << "receive " << i;
    const std::size_t size = static_cast<std::size_t>(i % kQueued) + 1;
    EXPECT_TRUE(holds_pattern(receives[i], kTag, size)) << "receive " << i << " out of order";
  }
  expect_sent(*rank1_, early);
  expect_sent(*rank1_, late);
  expect_sent(*rank0_, {hello});
}

TEST_F(TcpHandover, TheSpareDialsFailedHandshakeFailsNothing) {
  std::vector<TestMessage> early = send_in_order(*rank1_, 0, 1, 3);
  TestMessage dial = post_pattern_send(*rank0_, 1, kContext, 2, 8);
  std::vector<TestMessage> receives = receive_in_order(*rank0_, 1, 1, 3);
  expect_received_in_order(*rank0_, receives, 1);
  // Rank 1's hanging dial times out here: closed quietly, not taken for rank 0's failure.
  std::this_thread::sleep_for(kHandshakeTimeout * 3);
  EXPECT_FALSE(rank1_->tcp().sends_on_own_dial(0));
  TestMessage dial_in = post_guarded_receive(*rank1_, 0, kContext, 2, 8);
  ASSERT_TRUE(testing::completes_polled(*rank1_, dial_in.request, 10s));
  EXPECT_TRUE(holds_pattern(dial_in, 2, 8));
  std::vector<TestMessage> later = send_in_order(*rank1_, 0, 4, 5);
  std::vector<TestMessage> later_in = receive_in_order(*rank0_, 1, 4, 5);
  expect_received_in_order(*rank0_, later_in, 4);
  expect_sent(*rank1_, early);
  expect_sent(*rank1_, later);
}

TEST_F(TcpHandover, ThePairPartsGracefully) {
  TestMessage dial = post_pattern_send(*rank0_, 1, kContext, 2, 8);
  std::vector<TestMessage> early = send_in_order(*rank1_, 0, 1, 1);
  std::vector<TestMessage> receives = receive_in_order(*rank0_, 1, 1, 1);
  expect_received_in_order(*rank0_, receives, 1);
  ASSERT_FALSE(rank1_->tcp().sends_on_own_dial(0));
  expect_parts_gracefully(*rank0_, rank1_);
}

// Rank 0's first address for rank 1 is a socket that never answers, so rank 1's dial is ready
// while rank 0's still waits for the silent socket's challenge: rank 0 gives its dial up and
// sends on rank 1's, whether or not rank 1 sent messages on it already.
class TcpHandoverOfAnUnprovedDial : public SilentAddressPair {
 protected:
  void SetUp() override { make_ranks(/*hanging=*/0, /*then_real=*/true); }

  // Both ranks dial: rank 0 first (its dial hangs on the silent address, then moves on to rank
  // 1's), rank 1 second (ready at once). Rank 1 sends `early` messages before rank 0's dial
  // reaches it. Then messages go both ways, in order.
  void exchange_after_both_dialled(int early) {
    // A receive dials, as a send does.
    TestMessage last_in = post_guarded_receive(*rank0_, 1, kContext, 9, 4);
    std::vector<TestMessage> early_in = receive_in_order(*rank0_, 1, 1, early);
    TestMessage pending_in = post_guarded_receive(*rank1_, 0, kContext, 2, 8);
    std::this_thread::sleep_for(100ms);
    ASSERT_TRUE(rank1_->tcp().sends_on_own_dial(0));
    std::vector<TestMessage> early_out = send_in_order(*rank1_, 0, 1, early);
    expect_received_in_order(*rank0_, early_in, 1);
    TestMessage pending = post_pattern_send(*rank0_, 1, kContext, 2, 8);
    ASSERT_TRUE(testing::completes_polled(*rank1_, pending_in.request, 10s));
    EXPECT_TRUE(holds_pattern(pending_in, 2, 8));
    EXPECT_TRUE(rank1_->tcp().sends_on_own_dial(0));
    EXPECT_FALSE(rank0_->tcp().sends_on_own_dial(1));
    std::vector<TestMessage> later_in = receive_in_order(*rank0_, 1, 3, 10);
    std::vector<TestMessage> later_out = send_in_order(*rank1_, 0, 3, 10);
    expect_received_in_order(*rank0_, later_in, 3);
    TestMessage last = post_pattern_send(*rank1_, 0, kContext, 9, 4);
    ASSERT_TRUE(testing::completes_polled(*rank0_, last_in.request, 10s));
    EXPECT_TRUE(holds_pattern(last_in, 9, 4));
    expect_sent(*rank1_, {last});
    expect_sent(*rank1_, early_out);
    expect_sent(*rank1_, later_out);
    expect_sent(*rank0_, {pending});
  }
};

TEST_F(TcpHandoverOfAnUnprovedDial, GivesWayToAnIdleConnection) {
  exchange_after_both_dialled(/*early=*/0);
}

TEST_F(TcpHandoverOfAnUnprovedDial, GivesWayToAConnectionThatCarriedMessages) {
  exchange_after_both_dialled(/*early=*/3);
}

// A rank that needs a peer whose own connection to it is between hello and proof waits for the
// proof instead of dialling; a dial that becomes ready meanwhile waits too (proof_wait.h). Relays
// in front of either rank hold handshake messages back, and strangers send hellos by hand.
class TcpProofWait : public ::testing::Test {
 protected:
  // `relayed`: the ranks whose peer reaches them through a relay (relay_into_).
  void make_ranks(std::chrono::milliseconds proof_wait, std::vector<int> relayed = {}) {
    TcpPathOptions options = options_with_timeout(10s);
    options.proof_wait = proof_wait;
    for (int rank : {0, 1}) {
      options.rank = rank;
      ranks_[rank] = std::make_unique<TcpRank>(rank, options, nullptr);
    }
    util::SocketAddress dialled_at[2];  // where the other rank reaches each rank
    for (int rank : {0, 1}) {
      dialled_at[rank] = ranks_[rank]->listen_address();
      if (std::find(relayed.begin(), relayed.end(), rank) != relayed.end()) {
        relay_into_[rank] = std::make_unique<testing::WireTap>(dialled_at[rank]);
        dialled_at[rank] = relay_into_[rank]->address();
      }
    }
    ranks_[0]->set_peer_candidates({{ranks_[0]->listen_address()}, {dialled_at[1]}});
    ranks_[1]->set_peer_candidates({{dialled_at[0]}, {ranks_[1]->listen_address()}});
  }

  TcpRank& rank(int r) { return *ranks_[r]; }

  // A stranger's hello claiming rank 0, answered by rank 1's challenge: it awaits a proof.
  util::Fd stranger_claiming_rank0() {
    util::Fd stranger = testing::connect_to(rank(1).listen_address());
    testing::send_bytes(stranger.get(), transport::encode_hello({0, 2, util::fresh_nonce()}));
    EXPECT_EQ(testing::read_for(stranger.get(), transport::kChallengeBytes, 5s).size(),
              transport::kChallengeBytes);
    EXPECT_TRUE(testing::eventually([&] { return rank(1).tcp().awaits_proof_from(0); }, 5s, 1ms));
    return stranger;
  }

  void TearDown() override {
    ranks_[1].reset();
    ranks_[0].reset();
    for (auto& relay : relay_into_) relay.reset();  // last: the ranks' goodbyes cross them
  }

  static constexpr uint64_t kTag = 4;
  static constexpr int kCount = 20;
  std::unique_ptr<TcpRank> ranks_[2];
  std::unique_ptr<testing::WireTap> relay_into_[2];
};

// `waiting` needs its peer while the peer's connection to it awaits its proof: it dials only if
// the proof fails, so once the proof is in, both send on the peer's connection.
class TcpProofWaitBeforeDialling : public TcpProofWait,
                                   public ::testing::WithParamInterface<int> {};

TEST_P(TcpProofWaitBeforeDialling, ARankThatSawItsPeersHelloSendsOnThePeersConnection) {
  const int waiting = GetParam();
  const int other = 1 - waiting;
  make_ranks(/*proof_wait=*/10s, {waiting});
  relay_into_[waiting]->hold_to_target_after(transport::kHelloBytes);
  std::vector<TestMessage> into_waiting = receive_in_order(rank(other), waiting, kTag, kCount);
  ASSERT_TRUE(
      testing::eventually([&] { return rank(waiting).tcp().awaits_proof_from(other); }, 5s, 1ms));
  std::vector<TestMessage> from_waiting = send_in_order(rank(waiting), other, kTag, kCount);
  EXPECT_TRUE(rank(waiting).tcp().holds_dial_to(other));
  relay_into_[waiting]->release();
  EXPECT_TRUE(
      testing::eventually([&] { return !rank(waiting).tcp().holds_dial_to(other); }, 5s, 1ms));
  expect_received_in_order(rank(other), into_waiting, kTag);
  expect_sent(rank(waiting), from_waiting);
  EXPECT_FALSE(rank(waiting).tcp().sends_on_own_dial(other)) << "it dialled";
  EXPECT_TRUE(rank(other).tcp().sends_on_own_dial(waiting));
  TestMessage back = post_pattern_send(rank(other), waiting, kContext, 9, 6);
  TestMessage back_in = post_guarded_receive(rank(waiting), other, kContext, 9, 6);
  ASSERT_TRUE(testing::completes_polled(rank(waiting), back_in.request, 10s));
  EXPECT_TRUE(holds_pattern(back_in, 9, 6));
  expect_sent(rank(other), {back});
}

INSTANTIATE_TEST_SUITE_P(EitherRank, TcpProofWaitBeforeDialling, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == 0 ? "LowerRankWaits" : "HigherRankWaits";
                         });

// Both ranks dial before either sees the other's hello. Rank 1's dial becomes ready while rank
// 0's connection awaits its proof at rank 1: rank 1 writes nothing on it, and hands over when the
// proof comes, its queued messages first.
TEST_F(TcpProofWait, AHigherRanksDialReadyBeforeTheLowerRanksProofHandsOverWhenTheProofComes) {
  make_ranks(/*proof_wait=*/10s, {0, 1});
  relay_into_[0]->hold_to_target_after(0);                       // rank 1's hello
  relay_into_[1]->hold_to_target_after(transport::kHelloBytes);  // rank 0's proof
  std::vector<TestMessage> from1 = send_in_order(rank(1), 0, kTag, kCount);
  std::vector<TestMessage> into0 = receive_in_order(rank(0), 1, kTag, kCount);
  ASSERT_TRUE(testing::eventually([&] { return rank(1).tcp().awaits_proof_from(0); }, 5s, 1ms));
  relay_into_[0]->release();
  ASSERT_TRUE(testing::eventually([&] { return rank(1).tcp().holds_dial_to(0); }, 5s, 1ms))
      << "rank 1's ready dial was not held for rank 0's proof";
  relay_into_[1]->release();
  EXPECT_TRUE(testing::eventually([&] { return !rank(1).tcp().holds_dial_to(0); }, 5s, 1ms));
  std::vector<TestMessage> more_into0 = receive_in_order(rank(0), 1, kTag + 1, kCount);
  std::vector<TestMessage> more_from1 = send_in_order(rank(1), 0, kTag + 1, kCount);
  expect_received_in_order(rank(0), into0, kTag);
  expect_received_in_order(rank(0), more_into0, kTag + 1);
  expect_sent(rank(1), from1);
  expect_sent(rank(1), more_from1);
  EXPECT_FALSE(rank(1).tcp().sends_on_own_dial(0)) << "the pair uses two connections";
  EXPECT_TRUE(rank(0).tcp().sends_on_own_dial(1));
}

TEST(ProofWait, IsTwiceTheRoundTripPlusAFloorUnlessSetAndNeverPastTheHandshakeTimeout) {
  using transport::kProofWaitFloor;
  using transport::proof_wait;
  EXPECT_EQ(proof_wait(0ms, 300us, 10s), 600us + kProofWaitFloor);
  EXPECT_EQ(proof_wait(0ms, 0us, 10s), kProofWaitFloor);
  EXPECT_EQ(proof_wait(0ms, 8s, 10s), 10s);
  EXPECT_EQ(proof_wait(250ms, 300us, 10s), 250ms);
  EXPECT_EQ(proof_wait(20s, 300us, 10s), 10s);
}

// A hello proves nothing: a stranger that claims rank 0 and never proves it delays rank 1's dial
// for the wait, no longer; then rank 1 dials and sends on its own connection.
TEST_F(TcpProofWait, AStrangersHelloDelaysTheDialOnlyForTheWait) {
  make_ranks(/*proof_wait=*/1s);
  // Before the hello: rank 1's wait runs from when it read it.
  auto started = std::chrono::steady_clock::now();
  util::Fd stranger = stranger_claiming_rank0();
  std::vector<TestMessage> from1 = send_in_order(rank(1), 0, kTag, kCount);
  EXPECT_TRUE(rank(1).tcp().holds_dial_to(0));
  ASSERT_TRUE(testing::eventually([&] { return !rank(1).tcp().holds_dial_to(0); }, 5s, 1ms));
  EXPECT_GE(std::chrono::steady_clock::now() - started, 1s) << "the wait ended early";
  // Sent once rank 1's dial is in; rank 0's receives come only then (a receive dials).
  expect_sent(rank(1), from1);
  EXPECT_TRUE(rank(1).tcp().sends_on_own_dial(0));
  std::vector<TestMessage> into0 = receive_in_order(rank(0), 1, kTag, kCount);
  expect_received_in_order(rank(0), into0, kTag);
}

// A stranger's proof that fails ends the wait at once, not when it runs out.
TEST_F(TcpProofWait, AFailedProofEndsTheWait) {
  make_ranks(/*proof_wait=*/10s);
  util::Fd stranger = stranger_claiming_rank0();
  std::vector<TestMessage> from1 = send_in_order(rank(1), 0, kTag, kCount);
  EXPECT_TRUE(rank(1).tcp().holds_dial_to(0));
  testing::send_bytes(stranger.get(), transport::encode_proof({}));  // a digest of zeros
  ASSERT_TRUE(testing::eventually([&] { return !rank(1).tcp().holds_dial_to(0); }, 5s, 1ms))
      << "the wait did not end with the failed proof";
  expect_sent(rank(1), from1);
  EXPECT_TRUE(rank(1).tcp().sends_on_own_dial(0));
  std::vector<TestMessage> into0 = receive_in_order(rank(0), 1, kTag, kCount);
  expect_received_in_order(rank(0), into0, kTag);
}

// Without a hanging dial, both ranks dial at once and race; whichever way each race goes, every
// message arrives, in order, both ways, and the pair parts gracefully.
TEST(TcpHandoverRace, BothRanksDialingAtOnceKeepEveryMessageInOrderAndPartGracefully) {
  constexpr int kPairs = 10;
  constexpr int kMessages = 12;
  int handed_over = 0;
  for (int pair = 0; pair < kPairs; ++pair) {
    testing::TcpPair ranks = testing::make_tcp_pair(options_with_timeout(10s));
    TcpRank& rank0 = *ranks.receiver;
    TcpRank& rank1 = *ranks.sender;
    std::vector<TestMessage> from0, from1, into0, into1;
    std::thread other([&] { from1 = send_in_order(rank1, 0, 6, kMessages); });
    from0 = send_in_order(rank0, 1, 6, kMessages);
    other.join();
    into0 = receive_in_order(rank0, 1, 6, kMessages);
    into1 = receive_in_order(rank1, 0, 6, kMessages);
    expect_received_in_order(rank0, into0, 6);
    expect_received_in_order(rank1, into1, 6);
    expect_sent(rank0, from0);
    expect_sent(rank1, from1);
    // Rank 0 may send on rank 1's dial without any hand-over: when that dial is in before rank 0
    // first needs rank 1, rank 0 never dials (the fixtures above check the lower rank's rule).
    if (rank0.tcp().sends_on_own_dial(1) && !rank1.tcp().sends_on_own_dial(0)) ++handed_over;
    expect_parts_gracefully(rank0, ranks.sender);
  }
  RecordProperty("handed_over", handed_over);
}

}  // namespace
}  // namespace weft
