#include "weft/prefix_store.h"

#include "weft/error.h"

namespace weft {

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> store)
    : prefix_(std::move(prefix)), store_(std::move(store)) {
  if (!store_) throw Error(ErrorCode::kInvalidArgument, "PrefixStore needs a store");
  timeout_ = store_->timeout();
}

std::vector<std::string> PrefixStore::full(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const std::string& key : keys) out.push_back(full(key));
  return out;
}

void PrefixStore::set(const std::string& key, const Bytes& value) { store_->set(full(key), value); }
Bytes PrefixStore::get(const std::string& key) {
  // Our timeout, not the shared store's.
  store_->wait({full(key)}, timeout());
  return store_->get(full(key));
}
int64_t PrefixStore::add(const std::string& key, int64_t delta) {
  return store_->add(full(key), delta);
}
Bytes PrefixStore::compare_set(const std::string& key, const Bytes& expected,
                               const Bytes& desired) {
  return store_->compare_set(full(key), expected, desired);
}
bool PrefixStore::delete_key(const std::string& key) { return store_->delete_key(full(key)); }
bool PrefixStore::check(const std::vector<std::string>& keys) { return store_->check(full(keys)); }
int64_t PrefixStore::num_keys() { return store_->num_keys(); }
void PrefixStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  store_->wait(full(keys), timeout);
}
std::vector<Bytes> PrefixStore::multi_get(const std::vector<std::string>& keys) {
  store_->wait(full(keys), timeout());
  return store_->multi_get(full(keys));
}
void PrefixStore::multi_set(const std::vector<std::string>& keys,
                            const std::vector<Bytes>& values) {
  store_->multi_set(full(keys), values);
}
void PrefixStore::set_timeout(Duration timeout) { timeout_ = timeout; }

}  // namespace weft
