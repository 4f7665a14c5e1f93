#include "core/op_queue.h"

#include <sys/prctl.h>

namespace weft::core {

OpQueue::~OpQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
}

OpQueue::Ticket OpQueue::submit(std::function<void()> op) {
  bool wake = false;
  Ticket ticket = 0;
  {
    std::lock_guard lock(mutex_);
    unfinished_.fetch_add(1, std::memory_order_acq_rel);
    ticket = next_ticket_++;
    pending_.push_back(Pending{ticket, Clock::now(), std::move(op)});
    if (!worker_.joinable()) worker_ = std::thread([this] { run(); });
    wake = worker_asleep_;
  }
  if (wake) changed_.notify_all();
  return ticket;
}

void OpQueue::run_through(Ticket ticket) {
  std::unique_lock lock(mutex_);
  waiters_come_ = true;
  while (!running_ && !pending_.empty() && pending_.front().ticket <= ticket) run_front(lock);
  bool wake = worker_asleep_ && (worker_may_take() || stopping_);
  lock.unlock();
  if (wake) changed_.notify_all();
}

void OpQueue::run_front(std::unique_lock<std::mutex>& lock) {
  std::function<void()> op = std::move(pending_.front().op);
  pending_.pop_front();
  running_ = true;
  lock.unlock();
  op();  // ops catch their own errors and store them on their Work
  lock.lock();
  running_ = false;
  unfinished_.fetch_sub(1, std::memory_order_acq_rel);
}

void OpQueue::run() {
  // The head start is a deadline of tens of microseconds: the default timer slack (50 us)
  // would double it.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  std::unique_lock lock(mutex_);
  auto may_act = [this] { return worker_may_take() || (stopping_ && !running_); };
  for (;;) {
    if (!may_act()) {
      worker_asleep_ = true;
      changed_.wait(lock, may_act);
      worker_asleep_ = false;
    }
    // Operations already issued still run at shutdown: their Work objects wait for them.
    if (pending_.empty()) return;
    if (waiters_come_ && !stopping_) {
      auto claimable_at = pending_.front().issued + waiter_head_start_;
      if (Clock::now() < claimable_at) {
        changed_.wait_until(lock, claimable_at);
        continue;
      }
      waiters_come_ = false;  // the head start passed unclaimed
    }
    run_front(lock);
  }
}

}  // namespace weft::core
