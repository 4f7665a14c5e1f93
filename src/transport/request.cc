#include "transport/request.h"

#include <utility>

#include "util/futex.h"

namespace weft::transport {

bool Request::wait(std::chrono::steady_clock::time_point deadline, int64_t spin_us,
                   const std::function<bool()>& poll, const std::function<void()>& before_sleep,
                   bool may_yield) {
  bool moved = false;
  auto progressed = [&] {
    if (done()) return true;
    if (poll && poll()) moved = true;
    return done();
  };
  // A spin that moved bytes (a large message streaming in or out through this thread) was not
  // an idle wait: sleeping now would hand the transfer to another thread and cost a wake-up.
  while (!util::spin_until(progressed, spin_us, may_yield)) {
    if (spin_us <= 0 || !std::exchange(moved, false)) break;
    if (std::chrono::steady_clock::now() >= deadline) break;
  }
  if (done()) return true;
  if (before_sleep) {
    before_sleep();
    if (done()) return true;
  }
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    uint32_t seen = state_.load(std::memory_order_seq_cst);
    if (seen == kPending || seen == kClaimed) util::futex_wait(state_, seen, deadline);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
  return true;
}

bool Request::claim() {
  uint32_t expected = kPending;
  return state_.compare_exchange_strong(expected, kClaimed, std::memory_order_acq_rel);
}

void Request::complete() {
  if (claim()) publish(kDone);
}

void Request::fail(std::shared_ptr<const Error> error) {
  if (!claim()) return;
  error_ = std::move(error);
  publish(kFailed);
}

void Request::publish(uint32_t state) {
  state_.store(state, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) util::futex_wake_all(state_);
}

}  // namespace weft::transport
