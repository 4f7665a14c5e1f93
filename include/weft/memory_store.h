// MemoryStore — a Store held in this process's memory.
//
// For tests and for ranks that are threads of one process (the in-process test tier).
// Thread-safe; blocking calls wait on a condition variable with the deadline.
#pragma once

#include <memory>

#include "weft/export.h"
#include "weft/store.h"

namespace weft {

class WEFT_API MemoryStore final : public Store {
 public:
  MemoryStore();
  ~MemoryStore() override;

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool delete_key(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t num_keys() override;
  void wait(const std::vector<std::string>& keys, Duration timeout) override;
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys) override;
  void multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override;
  using Store::wait;

 private:
  // The table, its lock and the condition its waiters sleep on (defined in the library, where
  // the thread-safety analysis checks that the table is only touched under the lock).
  class State;
  std::unique_ptr<State> state_;
};

}  // namespace weft
