#include "weft/memory_store.h"

#include "store/key_value_table.h"
#include "util/deadline.h"
#include "weft/error.h"

namespace weft {

class MemoryStore::Table : public store::KeyValueTable {};

MemoryStore::MemoryStore() : table_(std::make_unique<Table>()) {}
MemoryStore::~MemoryStore() = default;

void MemoryStore::set(const std::string& key, const Bytes& value) {
  std::lock_guard lock(mutex_);
  table_->set(key, value);
  changed_.notify_all();
}

Bytes MemoryStore::get(const std::string& key) {
  std::unique_lock lock(mutex_);
  wait_locked(lock, {key}, timeout(), "store.get");
  return *table_->find(key);
}

int64_t MemoryStore::add(const std::string& key, int64_t delta) {
  std::lock_guard lock(mutex_);
  int64_t value = table_->add(key, delta);
  changed_.notify_all();
  return value;
}

Bytes MemoryStore::compare_set(const std::string& key, const Bytes& expected,
                               const Bytes& desired) {
  std::lock_guard lock(mutex_);
  Bytes value = table_->compare_set(key, expected, desired);
  changed_.notify_all();
  return value;
}

bool MemoryStore::delete_key(const std::string& key) {
  std::lock_guard lock(mutex_);
  return table_->erase(key);
}

bool MemoryStore::check(const std::vector<std::string>& keys) {
  std::lock_guard lock(mutex_);
  return table_->contains_all(keys);
}

int64_t MemoryStore::num_keys() {
  std::lock_guard lock(mutex_);
  return table_->size();
}

void MemoryStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  std::unique_lock lock(mutex_);
  wait_locked(lock, keys, timeout, "store.wait");
}

std::vector<Bytes> MemoryStore::multi_get(const std::vector<std::string>& keys) {
  std::unique_lock lock(mutex_);
  wait_locked(lock, keys, timeout(), "store.multi_get");
  std::vector<Bytes> values;
  for (const std::string& key : keys) values.push_back(*table_->find(key));
  return values;
}

void MemoryStore::multi_set(const std::vector<std::string>& keys,
                            const std::vector<Bytes>& values) {
  if (keys.size() != values.size()) {
    throw Error(ErrorCode::kInvalidArgument, "store.multi_set: " + std::to_string(keys.size()) +
                                                 " keys but " + std::to_string(values.size()) +
                                                 " values");
  }
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < keys.size(); ++i) table_->set(keys[i], values[i]);
  changed_.notify_all();
}

void MemoryStore::wait_locked(std::unique_lock<std::mutex>& lock,
                              const std::vector<std::string>& keys, Duration timeout,
                              const char* op) {
  auto deadline = util::deadline_after(timeout);
  while (!table_->contains_all(keys)) {
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout &&
        !table_->contains_all(keys)) {
      throw Error(ErrorCode::kTimeout, std::string(op) + ": keys " + table_->missing(keys) +
                                           " still missing after " +
                                           std::to_string(timeout.count()) + " ms");
    }
  }
}

}  // namespace weft
