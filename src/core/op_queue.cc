#include "core/op_queue.h"

namespace weft::core {

OpQueue::~OpQueue() {
  {
    util::MutexLock lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void OpQueue::submit(std::function<void()> op) {
  {
    util::MutexLock lock(mutex_);
    unfinished_.fetch_add(1, std::memory_order_acq_rel);
    pending_.push_back(std::move(op));
    if (!worker_.joinable()) worker_ = std::thread([this] { run(); });
  }
  changed_.notify_all();
}

void OpQueue::run() {
  util::UniqueLock lock(mutex_);
  for (;;) {
    while (!stopping_ && pending_.empty()) changed_.wait(lock);
    // Operations already issued still run at shutdown: their Work objects wait for them.
    if (pending_.empty()) return;
    std::function<void()> op = std::move(pending_.front());
    pending_.pop_front();
    lock.unlock();
    op();  // ops catch their own errors and store them on their Work
    lock.lock();
    unfinished_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace weft::core
