// What the log says about collectives: the algorithm per op and size class once at INFO, every
// op's start and end at TRACE.
#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "support/thread_ranks.h"
#include "weft/log.h"

namespace weft {
namespace {

class CapturedLines {
 public:
  CapturedLines() : level_before_(log_level()) {
    set_log_level(LogLevel::kTrace);
    set_log_sink([this](LogLevel, std::string_view subsystem, std::string_view line) {
      if (subsystem != "coll") return;
      std::lock_guard lock(mutex_);
      lines_.emplace_back(line);
    });
  }
  ~CapturedLines() {
    set_log_sink(nullptr);
    set_log_level(level_before_);
  }
  int count(const std::string& words) {
    std::lock_guard lock(mutex_);
    int n = 0;
    for (const std::string& line : lines_) n += line.find(words) != std::string::npos;
    return n;
  }

 private:
  LogLevel level_before_;
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

TEST(OpLog, AlgorithmOncePerSizeClassAndEveryOpAtTrace) {
  CapturedLines captured;
  testing::run_ranks(2, [](ProcessGroup& group) {
    std::vector<float> small(2, 1.0f), large(1 << 18, 1.0f);
    for (int i = 0; i < 3; ++i) group.all_reduce(small, ReduceOp::kSum, {"ring"});
    group.all_reduce(large, ReduceOp::kSum, {"ring"});
  });
  // One INFO line per class and rank (both ranks are threads of this process).
  EXPECT_EQ(captured.count("all_reduce up to 8 B runs ring"), 2);
  EXPECT_EQ(captured.count("all_reduce up to 1 MiB runs ring"), 2);
  EXPECT_EQ(captured.count("runs ring"), 2 * 2);
  EXPECT_EQ(captured.count("start all_reduce seq"), 2 * 4);
  EXPECT_EQ(captured.count("done all_reduce seq 3 1048576 B float32 (ring)"), 2);
}

// A job that makes its group again (an elastic restart) logs the new group's choices: the
// memory of what was logged belongs to a group, not to its name.
TEST(OpLog, AGroupMadeAgainUnderItsNameLogsItsChoicesAgain) {
  CapturedLines captured;
  for (int job = 0; job < 2; ++job) {
    testing::run_ranks(2, [](ProcessGroup& group) {
      std::vector<float> small(2, 1.0f);
      group.all_reduce(small, ReduceOp::kSum, {"ring"});
      group.all_reduce(small, ReduceOp::kSum, {"ring"});
    });
  }
  EXPECT_EQ(captured.count("group default (2 ranks): all_reduce up to 8 B runs ring"), 2 * 2);
}

// End to end: the job's network numbers reach the selector, which takes Rabenseifner on 6
// ranks where the model says so for them (48 KiB on 100 Gbit/s with 5 us messages: from 40 KB
// to 67 KB, docs/scaling.md) and recursive doubling on its own numbers.
TEST(OpLog, TheJobsNetworkNumbersChooseRabenseifnerOffAPowerOfTwo) {
  setenv("WEFT_TRANSPORT", "tcp", 1);  // no shared memory: the selector prices the network
  const auto run = [] {
    testing::run_ranks(6, [](ProcessGroup& group) {
      std::vector<float> data(12 << 10, 1.0f);  // 48 KiB
      group.all_reduce(data);
      EXPECT_EQ(data.front(), 6.0f);
      EXPECT_EQ(data.back(), 6.0f);
    });
  };
  {
    CapturedLines captured;
    run();
    // Every rank says it: the six are threads of this process, each with its own group.
    EXPECT_EQ(captured.count("all_reduce up to 64 KiB runs recursive_doubling"), 6);
  }
  setenv("WEFT_NET_ALPHA", "5us", 1);
  setenv("WEFT_NET_BETA", "100Gbit/s", 1);
  setenv("WEFT_NET_GAMMA", "6GB/s", 1);
  {
    CapturedLines captured;
    run();
    EXPECT_EQ(captured.count("all_reduce up to 64 KiB runs rabenseifner"), 6);
  }
  for (const char* name : {"WEFT_NET_ALPHA", "WEFT_NET_BETA", "WEFT_NET_GAMMA", "WEFT_TRANSPORT"}) {
    unsetenv(name);
  }
}

}  // namespace
}  // namespace weft
