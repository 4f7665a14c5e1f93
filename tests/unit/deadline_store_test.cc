// DeadlineStore: every call ends by its own deadline, whether the store server answers or not,
// and never waits behind another thread's long call on the job's shared client.
#include "core/deadline_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "support/errors.h"
#include "support/store_server_process.h"
#include "weft/weft.h"

namespace weft::core {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::error_of;

// How long TcpStore waits for an answer to a call with this timeout (its documented rule: the
// timeout, then as long again, at least 100 ms and at most 5 s more).
std::chrono::milliseconds tcp_call_bound(std::chrono::milliseconds timeout) {
  return timeout +
         std::clamp(timeout, std::chrono::milliseconds(100), std::chrono::milliseconds(5000));
}

TEST(DeadlineStore, TheTimeoutItGivesATcpCallEndsThatCallInTime) {
  EXPECT_EQ(DeadlineStore::timeout_within(100ms), 0ms);
  EXPECT_EQ(DeadlineStore::timeout_within(150ms), 50ms);
  EXPECT_EQ(DeadlineStore::timeout_within(1000ms), 500ms);
  EXPECT_EQ(DeadlineStore::timeout_within(20'000ms), 15'000ms);
  for (auto left = 101ms; left < 30'000ms; left += 37ms) {
    std::chrono::milliseconds timeout = DeadlineStore::timeout_within(left);
    EXPECT_GT(timeout, 0ms) << left.count();
    EXPECT_LE(tcp_call_bound(timeout), left) << left.count();
    EXPECT_GE(tcp_call_bound(timeout), left - 1ms) << left.count();
  }
}

TEST(DeadlineStore, CallsToAStoppedServerEndByTheirDeadline) {
  testing::StoreServerProcess server;
  TcpStore shared("127.0.0.1", server.port(), 5000ms);
  DeadlineStore store(shared);
  store.set("k", to_bytes("v"), Clock::now() + 2s);
  server.stop();
  for (auto within : {300ms, 1000ms}) {
    auto start = Clock::now();
    Error error = error_of([&] { store.set("k", to_bytes("w"), start + within); });
    auto took = Clock::now() - start;
    EXPECT_EQ(error.code(), ErrorCode::kTimeout) << error.what();
    EXPECT_LE(took, within + 300ms);
  }
  server.resume();
  // The calls that gave up were served late, on connections given up with them; this one has
  // an answer of its own.
  EXPECT_EQ(store.add("n", 5, Clock::now() + 5s), 5);
  store.set("after", to_bytes("yes"), Clock::now() + 5s);
  EXPECT_EQ(to_string(store.wait_and_get("after", Clock::now() + 5s)), "yes");
  EXPECT_EQ(shared.timeout(), 5000ms) << "the shared client's timeout is not the calls' to change";
}

TEST(DeadlineStore, ACallDoesNotWaitBehindAnotherThreadsLongCallOnTheSharedClient) {
  testing::StoreServerProcess server;
  TcpStore shared("127.0.0.1", server.port(), 5000ms);
  DeadlineStore store(shared);
  std::thread waiter([&] {
    EXPECT_EQ(error_of([&] { shared.wait({"never"}, 2000ms); }).code(), ErrorCode::kTimeout);
  });
  std::this_thread::sleep_for(100ms);
  auto start = Clock::now();
  store.set("report", to_bytes("here"), start + 1s);
  EXPECT_LT(Clock::now() - start, 500ms);
  waiter.join();
  EXPECT_EQ(to_string(shared.get("report")), "here");
}

TEST(DeadlineStore, OtherStoresAreCalledAsTheyAre) {
  MemoryStore shared;
  DeadlineStore store(shared);
  store.set("k", to_bytes("v"), Clock::now() + 1s);
  EXPECT_EQ(to_string(shared.get("k")), "v");
  EXPECT_EQ(store.add("n", 2, Clock::now() + 1s), 2);
  EXPECT_EQ(to_string(store.compare_set("k", to_bytes("v"), to_bytes("w"), Clock::now() + 1s)),
            "w");
  std::thread later([&] {
    std::this_thread::sleep_for(100ms);
    shared.set("late", to_bytes("x"));
  });
  EXPECT_EQ(to_string(store.wait_and_get("late", Clock::now() + 5s)), "x");
  later.join();
  auto start = Clock::now();
  EXPECT_EQ(error_of([&] { store.wait_and_get("never", start + 200ms); }).code(),
            ErrorCode::kTimeout);
  EXPECT_LT(Clock::now() - start, 2s);
}

}  // namespace
}  // namespace weft::core
