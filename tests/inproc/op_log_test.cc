// What the log says about collectives: the algorithm per op and size class once at INFO, every
// op's start and end at TRACE.
#include <gtest/gtest.h>

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
  // Both ranks are threads of this process: one INFO line per class for the group.
  EXPECT_EQ(captured.count("all_reduce up to 8 B runs ring"), 1);
  EXPECT_EQ(captured.count("all_reduce up to 1 MiB runs ring"), 1);
  EXPECT_EQ(captured.count("runs ring"), 2);
  EXPECT_EQ(captured.count("start all_reduce seq"), 2 * 4);
  EXPECT_EQ(captured.count("done all_reduce seq 3 1048576 B float32 (ring)"), 2);
}

}  // namespace
}  // namespace weft
