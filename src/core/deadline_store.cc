#include "core/deadline_store.h"

#include <algorithm>

#include "util/deadline.h"
#include "weft/error.h"

namespace weft::core {

namespace {

using std::chrono::milliseconds;
using namespace std::chrono_literals;

[[noreturn]] void out_of_time(const char* op) {
  throw Error(ErrorCode::kTimeout, std::string(op) + ": no time left to ask the store");
}

}  // namespace

DeadlineStore::DeadlineStore(Store& store)
    : shared_(store), tcp_(dynamic_cast<TcpStore*>(&store)) {}

DeadlineStore::~DeadlineStore() = default;

milliseconds DeadlineStore::timeout_within(milliseconds time_left) {
  // The largest timeout whose answer bound fits: the bound grows with the timeout.
  milliseconds fits{0}, too_long = time_left + 1ms;
  while (too_long - fits > 1ms) {
    const milliseconds middle = fits + (too_long - fits) / 2;
    (TcpStore::answer_bound(middle) <= time_left ? fits : too_long) = middle;
  }
  return fits;
}

Store& DeadlineStore::store_for(Clock::time_point deadline, const char* op) {
  if (tcp_ == nullptr) return shared_;
  if (!own_) {
    const milliseconds connect_within = timeout_within(util::time_left(deadline));
    if (connect_within <= 0ms) out_of_time(op);
    own_ = tcp_->clone(connect_within);
  }
  const milliseconds timeout = timeout_within(util::time_left(deadline));
  if (timeout <= 0ms) out_of_time(op);
  own_->set_timeout(timeout);
  return *own_;
}

template <typename Call>
auto DeadlineStore::bounded(Clock::time_point deadline, const char* op, Call&& call) {
  if (!mutex_.try_lock_until(deadline)) out_of_time(op);
  util::TimedMutexLock lock(mutex_, std::adopt_lock);
  try {
    return call(store_for(deadline, op));
  } catch (const Error& error) {
    // A call that gave up may leave its answer on the way: the next starts on a new connection.
    if (error.code() == ErrorCode::kTimeout) own_.reset();
    throw;
  }
}

void DeadlineStore::set(const std::string& key, const Bytes& value, Clock::time_point deadline) {
  bounded(deadline, "store.set", [&](Store& store) { store.set(key, value); });
}

Bytes DeadlineStore::compare_set(const std::string& key, const Bytes& expected,
                                 const Bytes& desired, Clock::time_point deadline) {
  return bounded(deadline, "store.compare_set",
                 [&](Store& store) { return store.compare_set(key, expected, desired); });
}

int64_t DeadlineStore::add(const std::string& key, int64_t delta, Clock::time_point deadline) {
  return bounded(deadline, "store.add", [&](Store& store) { return store.add(key, delta); });
}

Bytes DeadlineStore::wait_and_get(const std::string& key, Clock::time_point deadline) {
  // Runs in bounded(), with the lock held: it reads own_.
  return bounded(deadline, "store.wait", [&](Store& store) WEFT_REQUIRES(mutex_) {
    // The server ends the wait itself: by the deadline on a store of our own, by its own
    // timeout on a shared one, whose timeout is not ours to change.
    store.wait({key}, own_ ? store.timeout() : util::time_left(deadline));
    return store.get(key);
  });
}

}  // namespace weft::core
