#include "store/key_value_table.h"

#include <cerrno>
#include <cstdlib>

#include "weft/error.h"

namespace weft::store {

const Bytes* KeyValueTable::find(const std::string& key) const {
  auto it = data_.find(key);
  return it == data_.end() ? nullptr : &it->second;
}

int64_t KeyValueTable::add(const std::string& key, int64_t delta) {
  int64_t value = 0;
  if (const Bytes* current = find(key)) {
    std::string text(current->begin(), current->end());
    char* end = nullptr;
    errno = 0;
    value = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "store.add: key '" + key + "' holds a value that is not a counter");
    }
  }
  value = static_cast<int64_t>(static_cast<uint64_t>(value) + static_cast<uint64_t>(delta));
  std::string text = std::to_string(value);
  data_[key] = Bytes(text.begin(), text.end());
  return value;
}

Bytes KeyValueTable::compare_set(const std::string& key, const Bytes& expected,
                                 const Bytes& desired) {
  auto it = data_.find(key);
  if (it == data_.end()) {
    // torch's rule: a missing key counts as "empty"; otherwise the expected value comes back.
    if (!expected.empty()) return expected;
    data_[key] = desired;
    return desired;
  }
  if (it->second == expected) it->second = desired;
  return it->second;
}

bool KeyValueTable::contains_all(const std::vector<std::string>& keys) const {
  for (const std::string& key : keys) {
    if (!data_.count(key)) return false;
  }
  return true;
}

std::string KeyValueTable::missing(const std::vector<std::string>& keys) const {
  std::string text;
  for (const std::string& key : keys) {
    if (data_.count(key)) continue;
    if (!text.empty()) text += ", ";
    text += "'" + key + "'";
  }
  return text;
}

}  // namespace weft::store
