// Locks the thread-safety analysis can follow (util/thread_annotations.h): util::Mutex and its
// timed and recursive kinds over the std ones, the scoped MutexLock, the relockable UniqueLock
// and CondVar, a std::condition_variable that waits with a UniqueLock.
//
// Every function but TimedMutex's is a one-line inline forward to the std type: the code
// generated is that of std::mutex, std::lock_guard, std::unique_lock and
// std::condition_variable (same sizes, no extra state but UniqueLock's owns flag, which
// std::unique_lock has too).
//
// Thread safety: as the std types they wrap.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "util/thread_annotations.h"

namespace weft::util {

class WEFT_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() WEFT_ACQUIRE() { mutex_.lock(); }
  void unlock() WEFT_RELEASE() { mutex_.unlock(); }
  bool try_lock() WEFT_TRY_ACQUIRE(true) { return mutex_.try_lock(); }

  // The std::mutex underneath, for CondVar. Not for locking: the analysis would not see it.
  std::mutex& native() { return mutex_; }

 private:
  std::mutex mutex_;
};

// A Mutex whose lock may also be given up at a deadline (DeadlineStore). A flag guarded by a
// std::mutex and a condition variable, not std::timed_mutex: that one's try_lock_until on the
// steady clock calls pthread_mutex_clocklock, which ThreadSanitizer does not intercept, so it
// would take every such lock for none (an unlock of an unlocked mutex, and whatever the lock
// guards as unguarded); pthread_cond_clockwait it does intercept. Not on any hot path: a
// DeadlineStore call is a store round trip.
class WEFT_CAPABILITY("mutex") TimedMutex {
 public:
  TimedMutex() = default;
  TimedMutex(const TimedMutex&) = delete;
  TimedMutex& operator=(const TimedMutex&) = delete;

  void lock() WEFT_ACQUIRE() {
    std::unique_lock<std::mutex> state(state_);
    freed_.wait(state, [this] { return !held_; });
    held_ = true;
  }
  void unlock() WEFT_RELEASE() {
    {
      std::lock_guard<std::mutex> state(state_);
      held_ = false;
    }
    freed_.notify_one();
  }
  bool try_lock() WEFT_TRY_ACQUIRE(true) {
    std::lock_guard<std::mutex> state(state_);
    if (held_) return false;
    held_ = true;
    return true;
  }
  template <typename Clock, typename Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline)
      WEFT_TRY_ACQUIRE(true) {
    std::unique_lock<std::mutex> state(state_);
    if (!freed_.wait_until(state, deadline, [this] { return !held_; })) return false;
    held_ = true;
    return true;
  }

 private:
  std::mutex state_;
  std::condition_variable freed_;
  bool held_ = false;
};

// A Mutex the thread holding it may take again. The analysis does not model re-entry: it
// checks that members are accessed with the lock held, and would flag a function that takes
// it twice in its own body (re-entry through a call into another object is what this is for).
class WEFT_CAPABILITY("mutex") RecursiveMutex {
 public:
  RecursiveMutex() = default;
  RecursiveMutex(const RecursiveMutex&) = delete;
  RecursiveMutex& operator=(const RecursiveMutex&) = delete;

  void lock() WEFT_ACQUIRE() { mutex_.lock(); }
  void unlock() WEFT_RELEASE() { mutex_.unlock(); }
  bool try_lock() WEFT_TRY_ACQUIRE(true) { return mutex_.try_lock(); }

 private:
  std::recursive_mutex mutex_;
};

// Holds a lock for its scope (std::lock_guard). The second constructor adopts a lock the
// caller already holds (a try_lock() that succeeded): `if (!m.try_lock()) return; MutexLock
// lock(m, std::adopt_lock);`.
template <typename M>
class WEFT_SCOPED_CAPABILITY BasicMutexLock {
 public:
  explicit BasicMutexLock(M& mutex) WEFT_ACQUIRE(mutex) : mutex_(mutex) { mutex_.lock(); }
  BasicMutexLock(M& mutex, std::adopt_lock_t) WEFT_REQUIRES(mutex) : mutex_(mutex) {}
  ~BasicMutexLock() WEFT_RELEASE() { mutex_.unlock(); }
  BasicMutexLock(const BasicMutexLock&) = delete;
  BasicMutexLock& operator=(const BasicMutexLock&) = delete;

 private:
  M& mutex_;
};
using MutexLock = BasicMutexLock<Mutex>;
using TimedMutexLock = BasicMutexLock<TimedMutex>;
using RecursiveMutexLock = BasicMutexLock<RecursiveMutex>;

// A lock on a Mutex that may be given up and taken again in its scope (std::unique_lock),
// and that CondVar waits with. Not movable: the analysis ties it to one scope.
class WEFT_SCOPED_CAPABILITY UniqueLock {
 public:
  explicit UniqueLock(Mutex& mutex) WEFT_ACQUIRE(mutex) : mutex_(mutex), owns_(true) {
    mutex_.lock();
  }
  ~UniqueLock() WEFT_RELEASE() {
    if (owns_) mutex_.unlock();
  }
  UniqueLock(const UniqueLock&) = delete;
  UniqueLock& operator=(const UniqueLock&) = delete;

  void lock() WEFT_ACQUIRE() {
    mutex_.lock();
    owns_ = true;
  }
  void unlock() WEFT_RELEASE() {
    owns_ = false;
    mutex_.unlock();
  }

 private:
  friend class CondVar;
  Mutex& mutex_;
  bool owns_;
};

// std::condition_variable for a Mutex. Waits take the UniqueLock held: the lock is given up
// while asleep and held again when they return, so to the analysis it is held throughout.
// There is no predicate overload: write the loop (`while (!ready_) changed_.wait(lock);`) so
// that the analysis sees the guarded members read with the lock held.
class CondVar {
 public:
  void notify_one() noexcept { cv_.notify_one(); }
  void notify_all() noexcept { cv_.notify_all(); }

  void wait(UniqueLock& lock) {
    std::unique_lock<std::mutex> native(lock.mutex_.native(), std::adopt_lock);
    cv_.wait(native);
    native.release();
  }
  template <typename Clock, typename Duration>
  std::cv_status wait_until(UniqueLock& lock,
                            const std::chrono::time_point<Clock, Duration>& deadline) {
    std::unique_lock<std::mutex> native(lock.mutex_.native(), std::adopt_lock);
    const std::cv_status status = cv_.wait_until(native, deadline);
    native.release();
    return status;
  }
  template <typename Rep, typename Period>
  std::cv_status wait_for(UniqueLock& lock, const std::chrono::duration<Rep, Period>& timeout) {
    std::unique_lock<std::mutex> native(lock.mutex_.native(), std::adopt_lock);
    const std::cv_status status = cv_.wait_for(native, timeout);
    native.release();
    return status;
  }

 private:
  std::condition_variable cv_;
};

}  // namespace weft::util
