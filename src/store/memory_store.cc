#include "weft/memory_store.h"

#include "store/key_value_table.h"
#include "util/deadline.h"
#include "util/mutex.h"
#include "weft/error.h"

namespace weft {

class MemoryStore::State {
 public:
  // Runs fn(table) under the lock.
  template <typename Fn>
  auto locked(Fn&& fn) WEFT_EXCLUDES(mutex_) {
    util::MutexLock lock(mutex_);
    return fn(table_);
  }
  // The same, then wakes every waiter: fn changed the table.
  template <typename Fn>
  auto changing(Fn&& fn) WEFT_EXCLUDES(mutex_) {
    util::MutexLock lock(mutex_);
    auto result = fn(table_);
    changed_.notify_all();
    return result;
  }
  // Runs fn(table) under the lock once every key is in the table; kTimeout naming the missing
  // keys when `timeout` passes first.
  template <typename Fn>
  auto once_present(const std::vector<std::string>& keys, Duration timeout, const char* op, Fn&& fn)
      WEFT_EXCLUDES(mutex_) {
    util::UniqueLock lock(mutex_);
    auto deadline = util::deadline_after(timeout);
    while (!table_.contains_all(keys)) {
      if (changed_.wait_until(lock, deadline) == std::cv_status::timeout &&
          !table_.contains_all(keys)) {
        throw Error(ErrorCode::kTimeout, std::string(op) + ": keys " + table_.missing(keys) +
                                             " still missing after " +
                                             std::to_string(timeout.count()) + " ms");
      }
    }
    return fn(table_);
  }

 private:
  util::Mutex mutex_;
  util::CondVar changed_;
  store::KeyValueTable table_ WEFT_GUARDED_BY(mutex_);
};

MemoryStore::MemoryStore() : state_(std::make_unique<State>()) {}
MemoryStore::~MemoryStore() = default;

void MemoryStore::set(const std::string& key, const Bytes& value) {
  state_->changing([&](store::KeyValueTable& table) {
    table.set(key, value);
    return 0;
  });
}

Bytes MemoryStore::get(const std::string& key) {
  return state_->once_present({key}, timeout(), "store.get",
                              [&](store::KeyValueTable& table) { return *table.find(key); });
}

int64_t MemoryStore::add(const std::string& key, int64_t delta) {
  return state_->changing([&](store::KeyValueTable& table) { return table.add(key, delta); });
}

Bytes MemoryStore::compare_set(const std::string& key, const Bytes& expected,
                               const Bytes& desired) {
  return state_->changing(
      [&](store::KeyValueTable& table) { return table.compare_set(key, expected, desired); });
}

bool MemoryStore::delete_key(const std::string& key) {
  return state_->locked([&](store::KeyValueTable& table) { return table.erase(key); });
}

bool MemoryStore::check(const std::vector<std::string>& keys) {
  return state_->locked([&](store::KeyValueTable& table) { return table.contains_all(keys); });
}

int64_t MemoryStore::num_keys() {
  return state_->locked([](store::KeyValueTable& table) { return table.size(); });
}

void MemoryStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  state_->once_present(keys, timeout, "store.wait", [](store::KeyValueTable&) { return 0; });
}

std::vector<Bytes> MemoryStore::multi_get(const std::vector<std::string>& keys) {
  return state_->once_present(keys, timeout(), "store.multi_get", [&](store::KeyValueTable& table) {
    std::vector<Bytes> values;
    for (const std::string& key : keys) values.push_back(*table.find(key));
    return values;
  });
}

void MemoryStore::multi_set(const std::vector<std::string>& keys,
                            const std::vector<Bytes>& values) {
  if (keys.size() != values.size()) {
    throw Error(ErrorCode::kInvalidArgument, "store.multi_set: " + std::to_string(keys.size()) +
                                                 " keys but " + std::to_string(values.size()) +
                                                 " values");
  }
  state_->changing([&](store::KeyValueTable& table) {
    for (std::size_t i = 0; i < keys.size(); ++i) table.set(keys[i], values[i]);
    return 0;
  });
}

}  // namespace weft
