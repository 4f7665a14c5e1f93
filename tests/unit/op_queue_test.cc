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

TEST(OpQueue, RunsOperationsInIssueOrderOnItsWorker) {
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
