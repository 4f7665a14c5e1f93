// CollectiveWork — the Work of a collective run by the group's OpQueue: done or failed once
// the worker has run it; waiting sleeps on a condition variable with a deadline.
#pragma once

#include <functional>
#include <memory>

#include "util/mutex.h"
#include "weft/error.h"
#include "weft/work.h"

namespace weft::core {

class CollectiveWork final : public Work {
 public:
  // on_abandon runs when a wait times out while the collective still runs: it must make the
  // collective fail soon (abort the group's collectives), so that the buffers are released.
  CollectiveWork(std::chrono::milliseconds timeout,
                 std::function<void(std::shared_ptr<const Error>)> on_abandon)
      : timeout_(timeout), on_abandon_(std::move(on_abandon)) {}

  void wait(std::optional<std::chrono::milliseconds> timeout) override;
  bool is_completed() const override;
  bool is_success() const override;
  std::exception_ptr exception() const override;
  int source_rank() const override { return -1; }

  // Called once by the worker.
  void finish(std::exception_ptr error);

 private:
  std::chrono::milliseconds timeout_;
  std::function<void(std::shared_ptr<const Error>)> on_abandon_;
  mutable util::Mutex mutex_;
  util::CondVar done_changed_;
  bool done_ WEFT_GUARDED_BY(mutex_) = false;
  std::exception_ptr error_ WEFT_GUARDED_BY(mutex_);
};

}  // namespace weft::core
