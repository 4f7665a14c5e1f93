#include "core/collective_work.h"

#include "util/deadline.h"
#include "weft/error.h"

namespace weft::core {

void CollectiveWork::wait(std::optional<std::chrono::milliseconds> timeout) {
  util::UniqueLock lock(mutex_);
  // The operation itself is bounded by the group's timeout; this bound only guards the wait.
  auto limit = timeout ? *timeout : timeout_ + std::chrono::milliseconds(5000);
  const auto until = util::deadline_after(limit);
  while (!done_ && done_changed_.wait_until(lock, until) != std::cv_status::timeout) {
  }
  if (!done_) {
    auto error = std::make_shared<const Error>(
        ErrorCode::kTimeout,
        "the collective did not finish within " + std::to_string(limit.count()) + " ms of waiting");
    // The collective still uses the caller's buffers: fail it, and wait (briefly) until it
    // has let go of them before the caller gets control back.
    lock.unlock();
    if (on_abandon_) on_abandon_(error);
    lock.lock();
    const auto let_go_by = util::deadline_after(std::chrono::seconds(5));
    while (!done_ && done_changed_.wait_until(lock, let_go_by) != std::cv_status::timeout) {
    }
    throw *error;
  }
  if (error_) std::rethrow_exception(error_);
}

bool CollectiveWork::is_completed() const {
  util::MutexLock lock(mutex_);
  return done_;
}

bool CollectiveWork::is_success() const {
  util::MutexLock lock(mutex_);
  return done_ && !error_;
}

std::exception_ptr CollectiveWork::exception() const {
  util::MutexLock lock(mutex_);
  return error_;
}

void CollectiveWork::finish(std::exception_ptr error) {
  {
    util::MutexLock lock(mutex_);
    error_ = std::move(error);
    done_ = true;
  }
  done_changed_.notify_all();
}

}  // namespace weft::core
