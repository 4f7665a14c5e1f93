// CollectiveWork — the Work of a collective run by the group's OpQueue: done or failed once
// the worker has run it; waiting sleeps on a condition variable with a deadline.
#pragma once

#include <condition_variable>
#include <mutex>

#include "weft/work.h"

namespace weft::core {

class CollectiveWork final : public Work {
 public:
  explicit CollectiveWork(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  void wait(std::optional<std::chrono::milliseconds> timeout) override;
  bool is_completed() const override;
  bool is_success() const override;
  std::exception_ptr exception() const override;
  int source_rank() const override { return -1; }

  // Called once by the worker.
  void finish(std::exception_ptr error);

 private:
  std::chrono::milliseconds timeout_;
  mutable std::mutex mutex_;
  std::condition_variable done_changed_;
  bool done_ = false;
  std::exception_ptr error_;
};

}  // namespace weft::core
