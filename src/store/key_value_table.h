// KeyValueTable — the semantics of every store, in one place: a map with torch's rules for
// add (decimal counters) and compare_set. Not thread-safe: its owner locks.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "weft/store.h"

namespace weft::store {

class KeyValueTable {
 public:
  void set(const std::string& key, Bytes value) { data_[key] = std::move(value); }
  const Bytes* find(const std::string& key) const;
  // Throws kInvalidArgument when the existing value is not a decimal counter.
  int64_t add(const std::string& key, int64_t delta);
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired);
  bool erase(const std::string& key) { return data_.erase(key) > 0; }
  bool contains_all(const std::vector<std::string>& keys) const;
  // The keys of `keys` that are missing, comma-separated (for timeout messages).
  std::string missing(const std::vector<std::string>& keys) const;
  int64_t size() const { return static_cast<int64_t>(data_.size()); }

 private:
  std::map<std::string, Bytes> data_;
};

}  // namespace weft::store
