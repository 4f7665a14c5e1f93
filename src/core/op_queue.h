// OpQueue — runs a group's asynchronous operations one after another, in the order issued, on
// one worker thread that starts on first use and stops with the queue, or on the thread that
// waits for them.
//
// A caller that issues an operation and waits for it straight away (torch 1.13 calls every
// collective that way, and so does a synchronous call behind an asynchronous one) would pay two
// thread hand-offs, to the worker and back, each a scheduler wake-up. So the worker leaves a
// just-issued operation to its waiter for a short head start, and run_through() lets the waiter
// run it (and whatever was issued before it) on its own thread. The worker takes what no waiter
// has claimed once the head start has passed, so an operation nobody waits for still runs.
//
// The head start is given while waiters come: once one passes unclaimed, the worker takes
// operations at once, until a waiter calls run_through() again. A program that overlaps its
// operations with other work (or waits without run_through, as the Python binding's
// interruptible wait does) pays the head start once, not on every operation.
//
// Thread-safe. idle() tells a synchronous caller whether it may run on its own thread right
// away (nothing queued or running) without overtaking an earlier asynchronous operation.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace weft::core {

class OpQueue {
 public:
  using Ticket = uint64_t;

  // Long enough for a caller to return from issuing an operation and call wait() (a few
  // microseconds, also through Python); short against any operation worth overlapping.
  static constexpr std::chrono::microseconds kWaiterHeadStart{50};

  explicit OpQueue(std::chrono::microseconds waiter_head_start = kWaiterHeadStart)
      : waiter_head_start_(waiter_head_start) {}
  ~OpQueue();
  OpQueue(const OpQueue&) = delete;
  OpQueue& operator=(const OpQueue&) = delete;

  Ticket submit(std::function<void()> op);
  // Runs on the calling thread, in order, the queued operations up to and including `ticket`
  // that no thread has begun, as long as no other thread is running one. Returns at once when
  // the worker (or another waiter) is running an operation.
  void run_through(Ticket ticket);
  bool idle() const { return unfinished_.load(std::memory_order_acquire) == 0; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending {
    Ticket ticket;
    Clock::time_point issued;
    std::function<void()> op;
  };

  void run();
  // With the lock held: takes the first pending operation and runs it without the lock.
  void run_front(std::unique_lock<std::mutex>& lock);
  bool worker_may_take() const { return !running_ && !pending_.empty(); }

  const std::chrono::microseconds waiter_head_start_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Pending> pending_;
  // Operations submitted and not yet finished: idle() reads it without the lock, which every
  // synchronous collective would otherwise take.
  std::atomic<int> unfinished_{0};
  Ticket next_ticket_ = 1;
  bool running_ = false;      // some thread runs an operation: the next must wait for it
  bool waiters_come_ = true;  // give just-issued operations the head start
  bool stopping_ = false;
  // The worker sleeps with no deadline (nothing it may take): only then must a change wake it.
  bool worker_asleep_ = false;
  std::thread worker_;
};

}  // namespace weft::core
