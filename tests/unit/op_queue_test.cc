#include "core/op_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace weft {
namespace {

using core::OpQueue;
using namespace std::chrono_literals;

// A head start no scheduler delay of the test's thread can outlast.
constexpr std::chrono::microseconds kLongHeadStart = 10s;

// Records which thread ran each operation, in the order they ran.
struct Log {
  std::mutex mutex;
  std::vector<std::pair<int, std::thread::id>> runs;

  std::function<void()> op(int id) {
    return [this, id] {
      std::lock_guard lock(mutex);
      runs.emplace_back(id, std::this_thread::get_id());
    };
  }
  std::vector<std::pair<int, std::thread::id>> snapshot() {
    std::lock_guard lock(mutex);
    return runs;
  }
};

bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST(OpQueue, TheWaiterRunsWhatItWaitsForOnItsOwnThread) {
  OpQueue queue(kLongHeadStart);
  Log log;
  auto ticket = queue.submit(log.op(1));
  queue.run_through(ticket);
  auto runs = log.snapshot();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].second, std::this_thread::get_id());
  EXPECT_TRUE(queue.idle());
}

TEST(OpQueue, TheWorkerLeavesAJustIssuedOperationToItsWaiter) {
  OpQueue queue(200ms);
  Log log;
  auto ticket = queue.submit(log.op(1));
  std::this_thread::sleep_for(20ms);  // the worker is awake by now, and waits
  EXPECT_TRUE(log.snapshot().empty());
  queue.run_through(ticket);
  ASSERT_EQ(log.snapshot().size(), 1u);
}

TEST(OpQueue, AfterAnUnclaimedHeadStartTheWorkerTakesAtOnceUntilAWaiterComes) {
  OpQueue queue(200ms);
  Log log;
  queue.submit(log.op(1));  // nobody waits for it: the worker runs it after the head start
  ASSERT_TRUE(wait_for([&] { return queue.idle(); }, 5s));
  auto second = queue.submit(log.op(2));
  // Taken at once, well before another head start would pass (wait_for polls every 1 ms).
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_for([&] { return queue.idle(); }, 5s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 150ms);
  queue.run_through(second);  // a waiter came: the next operation is left to its waiter again
  auto third = queue.submit(log.op(3));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(log.snapshot().size(), 2u);
  queue.run_through(third);
  auto runs = log.snapshot();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[2].second, std::this_thread::get_id());
}

TEST(OpQueue, TheWaiterRunsEarlierOperationsFirstAndNothingAfterIts) {
  OpQueue queue(kLongHeadStart);
  Log log;
  queue.submit(log.op(1));
  auto second = queue.submit(log.op(2));
  queue.run_through(second);
  auto runs = log.snapshot();
  ASSERT_GE(runs.size(), 2u);
  EXPECT_EQ(runs[0].first, 1);
  EXPECT_EQ(runs[1].first, 2);
  // An operation issued later is not this waiter's to run.
  auto third = queue.submit(log.op(3));
  queue.run_through(second);
  EXPECT_EQ(log.snapshot().size(), 2u);
  queue.run_through(third);
  runs = log.snapshot();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[2].first, 3);
  EXPECT_TRUE(queue.idle());
}

TEST(OpQueue, TheWorkerRunsWhatNobodyWaitsFor) {
  OpQueue queue;
  Log log;
  for (int i = 0; i < 100; ++i) queue.submit(log.op(i));
  ASSERT_TRUE(wait_for([&] { return queue.idle(); }, 5s));
  auto runs = log.snapshot();
  ASSERT_EQ(runs.size(), 100u);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(runs[i].first, i);
    EXPECT_NE(runs[i].second, std::this_thread::get_id());
  }
}

TEST(OpQueue, AWaiterDoesNotOvertakeTheRunningOperation) {
  OpQueue queue;
  std::atomic<bool> release{false};
  std::atomic<bool> first_started{false};
  Log log;
  queue.submit([&] {
    first_started = true;
    while (!release) std::this_thread::sleep_for(100us);
    log.op(1)();
  });
  auto second = queue.submit(log.op(2));
  ASSERT_TRUE(wait_for([&] { return first_started.load(); }, 5s));
  queue.run_through(second);  // the worker runs the first: returns without running the second
  EXPECT_TRUE(log.snapshot().empty());
  release = true;
  ASSERT_TRUE(wait_for([&] { return queue.idle(); }, 5s));
  auto runs = log.snapshot();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].first, 1);
  EXPECT_EQ(runs[1].first, 2);
}

TEST(OpQueue, ManyWaitersAndTheWorkerKeepTheIssueOrder) {
  OpQueue queue;
  Log log;
  constexpr int kThreads = 4;
  constexpr int kOpsPerThread = 500;
  std::mutex issue;  // one issue order across the threads
  int next_id = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kOpsPerThread; ++i) {
        OpQueue::Ticket ticket;
        {
          std::lock_guard lock(issue);
          ticket = queue.submit(log.op(next_id++));
        }
        if ((i + t) % 3 != 0) queue.run_through(ticket);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_TRUE(wait_for([&] { return queue.idle(); }, 10s));
  auto runs = log.snapshot();
  ASSERT_EQ(runs.size(), static_cast<std::size_t>(kThreads * kOpsPerThread));
  for (int i = 0; i < kThreads * kOpsPerThread; ++i) ASSERT_EQ(runs[i].first, i);
}

TEST(OpQueue, ShutdownRunsWhatWasIssued) {
  Log log;
  {
    OpQueue queue;
    for (int i = 0; i < 10; ++i) queue.submit(log.op(i));
  }
  auto runs = log.snapshot();
  ASSERT_EQ(runs.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(runs[i].first, i);
}

}  // namespace
}  // namespace weft
