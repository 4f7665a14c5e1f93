// OpQueue — runs a group's asynchronous operations one after another, in the order issued, on
// one worker thread that starts on first use and stops with the queue.
//
// Thread-safe. idle() tells a synchronous caller whether it may run on its own thread right
// away (nothing queued or running) without overtaking an earlier asynchronous operation.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <thread>

#include "util/mutex.h"

namespace weft::core {

class OpQueue {
 public:
  OpQueue() = default;
  ~OpQueue();
  OpQueue(const OpQueue&) = delete;
  OpQueue& operator=(const OpQueue&) = delete;

  void submit(std::function<void()> op);
  bool idle() const { return unfinished_.load(std::memory_order_acquire) == 0; }

 private:
  void run();

  mutable util::Mutex mutex_;
  util::CondVar changed_;
  std::deque<std::function<void()>> pending_ WEFT_GUARDED_BY(mutex_);
  // Operations submitted and not yet finished: idle() reads it without the lock, which every
  // synchronous collective would otherwise take.
  std::atomic<int> unfinished_{0};
  bool stopping_ WEFT_GUARDED_BY(mutex_) = false;
  // Started by the first submit (under mutex_); joined by the destructor, once stopping_ is
  // set, when no submit can race with it.
  std::thread worker_;
};

}  // namespace weft::core
