// Timeouts that name the stuck rank: a collective's timeout says which ranks had not reached it
// and where they were instead, a point-to-point timeout says what the peer was doing, and every
// timeout quotes the timeout that bounded the call (the call's own, not the group's). Over TCP
// and over shared memory alike.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "support/errors.h"
#include "support/store_server_process.h"
#include "support/thread_ranks.h"

namespace weft {
namespace {

using testing::error_of;
using namespace std::chrono_literals;

// WEFT_TRANSPORT for the groups made while it lives: "tcp", or "auto" (shared memory here).
class Transport {
 public:
  explicit Transport(const char* name) { setenv("WEFT_TRANSPORT", name, 1); }
  ~Transport() { unsetenv("WEFT_TRANSPORT"); }
};

void expect_mentions(const Error& error, const std::vector<std::string>& texts) {
  std::string what = error.what();
  for (const std::string& text : texts) {
    EXPECT_NE(what.find(text), std::string::npos) << "'" << text << "' not in: " << what;
  }
}

class StuckRank : public ::testing::TestWithParam<const char*> {};

// Ranks 0 and 2 bound an all_reduce by 400 ms of their own (the group has 30 s); rank 1 does
// not come. Each error quotes the call's 400 ms and names rank 1 and all_reduce #1.
TEST_P(StuckRank, ACallsOwnTimeoutIsQuotedAndTheAbsentRankNamed) {
  Transport transport(GetParam());
  testing::ThreadRanksOptions options;
  options.timeout = 30s;
  testing::run_ranks(
      3,
      [](ProcessGroup& group) {
        std::vector<float> data(8, 1.0f);
        group.all_reduce(data);  // #0: connects, maps the window
        if (group.rank() != 1) {
          CollectiveOptions bounded;
          bounded.timeout = 400ms;
          Error error = error_of([&] { group.all_reduce(data, ReduceOp::kSum, bounded); });
          EXPECT_TRUE(error.code() == ErrorCode::kTimeout || error.code() == ErrorCode::kAborted)
              << error.what();
          expect_mentions(error, {"400 ms", "rank 1 had not reached", "all_reduce #1"});
          EXPECT_EQ(std::string(error.what()).find("30000 ms"), std::string::npos) << error.what();
        }
        // Rank 1 never joins that all_reduce; its next collective hears that the group failed.
        std::this_thread::sleep_for(1500ms);
        if (group.rank() == 1) {
          EXPECT_NE(error_of([&] { group.barrier(); }).code(), ErrorCode::kInternal);
        }
      },
      options);
}

// Rank 1 is blocked in a receive from rank 0 while ranks 0 and 2 run an all_reduce (a classic
// deadlock): their timeout says rank 1 had not reached the all_reduce, and what it waits in.
TEST_P(StuckRank, ARankBlockedInAReceiveIsNamedWithWhatItWaitsIn) {
  Transport transport(GetParam());
  testing::ThreadRanksOptions options;
  options.timeout = 3s;
  testing::run_ranks(
      3,
      [](ProcessGroup& group) {
        std::vector<float> data(8, 1.0f);
        group.all_reduce(data);  // #0
        if (group.rank() == 1) {
          // Bounded by the group's 3 s: it reports itself waiting after 750 ms.
          Error error = error_of([&] { group.recv(data, 0, 7); });
          EXPECT_NE(error.code(), ErrorCode::kInternal) << error.what();
          return;
        }
        CollectiveOptions bounded;
        bounded.timeout = 1500ms;
        Error error = error_of([&] { group.all_reduce(data, ReduceOp::kSum, bounded); });
        expect_mentions(error, {"rank 1 had not reached", "all_reduce #1", "recv from rank 0"});
        std::this_thread::sleep_for(2500ms);  // rank 1's receive times out meanwhile
      },
      options);
}

// The mirror image: rank 0 waits 1 s for a message from rank 1, which is waiting in an
// all_reduce with rank 2 (reported after 750 ms of the group's 3 s): rank 0's error says so.
TEST_P(StuckRank, APointToPointTimeoutSaysThePeerWasInACollective) {
  Transport transport(GetParam());
  testing::ThreadRanksOptions options;
  options.timeout = 3s;
  testing::run_ranks(
      3,
      [](ProcessGroup& group) {
        std::vector<float> data(8, 1.0f);
        group.all_reduce(data);  // #0
        if (group.rank() == 0) {
          auto work = group.irecv(data, 1, 3);
          Error error = error_of([&] { work->wait(1000ms); });
          EXPECT_EQ(error.code(), ErrorCode::kTimeout) << error.what();
          expect_mentions(error, {"1000 ms", "rank 1 was waiting in all_reduce #1"});
          std::this_thread::sleep_for(3500ms);  // stays until the others time out too
        } else {
          Error error = error_of([&] { group.all_reduce(data); });  // #1: rank 0 never comes
          expect_mentions(error, {"rank 0 had not reached", "all_reduce #1"});
          std::this_thread::sleep_for(1000ms);
        }
      },
      options);
}

INSTANTIATE_TEST_SUITE_P(Transports, StuckRank, ::testing::Values("tcp", "auto"));

// Over TCP, rank 0 times out in all_reduce #1 (ranks 1 and 2 never come) and reads the board
// for who is missing; rank 1 aborts the group during that read. Rank 0's error is rank 1's
// verdict, followed by what rank 0 itself was waiting for when its own timeout came. (Over
// shared memory the window knows who is missing: its timeout reads nothing for that long.)
TEST(StuckRankOverTcp, AnAbortDuringATimeoutsDiagnosisKeepsTheRanksOwnView) {
  Transport transport("tcp");
  testing::ThreadRanksOptions options;
  options.timeout = 30s;
  testing::run_ranks(
      3,
      [](ProcessGroup& group) {
        std::vector<float> data(8, 1.0f);
        group.all_reduce(data);  // #0
        if (group.rank() == 0) {
          // Times out at 4 s, then reads the board for up to 1 s (a quarter, at most 1 s).
          CollectiveOptions bounded;
          bounded.timeout = 4000ms;
          Error error = error_of([&] { group.all_reduce(data, ReduceOp::kSum, bounded); });
          EXPECT_EQ(error.code(), ErrorCode::kAborted) << error.what();
          expect_mentions(error, {"aborted by rank 1: gave up",
                                  "; here, on rank 0, all_reduce #1 did not finish within its "
                                  "4000 ms timeout (waiting for "});
        } else if (group.rank() == 1) {
          std::this_thread::sleep_for(4500ms);  // in the middle of rank 0's read
          group.abort("gave up");
        }
        // Nobody leaves before rank 0's error: a rank that shuts down is a verdict too.
        std::this_thread::sleep_for(group.rank() == 2 ? 6000ms : 1500ms);
      },
      options);
}

// Rank 0 waits 1 s for a message from rank 1, which is itself waiting for rank 2: rank 0's
// error quotes its wait's 1000 ms (not the group's 3 s) and says what rank 1 was waiting in.
TEST(StuckPeer, APointToPointTimeoutSaysWhatThePeerWasWaitingIn) {
  testing::ThreadRanksOptions options;
  options.timeout = 3s;
  std::latch finished(3);
  testing::run_ranks(
      3,
      [&](ProcessGroup& group) {
        // As run_ranks_leaving_in_turn (which takes no timeout): nobody leaves before the others
        // are done, then one at a time.
        struct Leave {
          std::latch& finished;
          int rank;
          ~Leave() {
            finished.arrive_and_wait();
            std::this_thread::sleep_for(std::chrono::milliseconds(10) * rank);
          }
        } leave{finished, group.rank()};
        std::vector<int32_t> data(4, 1);
        if (group.rank() == 0) {
          auto work = group.irecv(data, 1, 5);
          Error error = error_of([&] { work->wait(1000ms); });
          EXPECT_EQ(error.code(), ErrorCode::kTimeout) << error.what();
          expect_mentions(error, {"1000 ms", "no message from rank 1",
                                  "rank 1 was waiting in recv from rank 2"});
          EXPECT_EQ(std::string(error.what()).find("3000 ms"), std::string::npos) << error.what();
        } else if (group.rank() == 1) {
          group.recv(data, 2, 6);  // rank 2 sends after 1.5 s
        } else {
          std::this_thread::sleep_for(1500ms);
          group.send(data, 1, 6);
        }
      },
      options);
}

// The store goes out of reach (its server stopped) while rank 1 is late: rank 0's collective
// still fails at its timeout, naming the peer it waited for, instead of sitting in store calls
// for the store's own timeout (the group's 20 s).
TEST(StuckStore, ARankCutOffFromTheStoreStillFailsAtItsTimeoutNamingThePeer) {
  Transport transport("tcp");
  testing::StoreServerProcess server;
  testing::ThreadRanksOptions options;
  options.make_store = [&] {
    return std::make_shared<TcpStore>("127.0.0.1", server.port(), 5000ms);
  };
  std::latch connected(2);
  testing::run_ranks(
      2,
      [&](ProcessGroup& group) {
        std::vector<float> data(8, 1.0f);
        group.all_reduce(data);  // #0: connects
        connected.arrive_and_wait();
        if (group.rank() == 0) {
          server.stop();
          CollectiveOptions bounded;
          bounded.timeout = 1000ms;
          auto start = std::chrono::steady_clock::now();
          Error error = error_of([&] { group.all_reduce(data, ReduceOp::kSum, bounded); });
          auto took = std::chrono::steady_clock::now() - start;
          server.resume();
          EXPECT_EQ(error.code(), ErrorCode::kTimeout) << error.what();
          expect_mentions(error, {"1000 ms", "all_reduce #1", "rank 1"});
          // The timeout, the diagnosis' look (a quarter of it) and a last write.
          EXPECT_LT(took, 2500ms) << error.what();
        }
        // Rank 1 comes only once rank 0 gave up.
        std::this_thread::sleep_for(3000ms);
      },
      options);
}

}  // namespace
}  // namespace weft
