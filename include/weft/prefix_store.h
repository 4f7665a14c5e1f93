// PrefixStore — the keys of another store under "prefix/", one per group, as torch's.
//
// Shares the underlying store (which must outlive nothing: it is held by shared_ptr).
// num_keys() counts the underlying store's keys, as torch's PrefixStore does.
#pragma once

#include <memory>

#include "weft/export.h"
#include "weft/store.h"

namespace weft {

class WEFT_API PrefixStore final : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> store);

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
  void set_timeout(Duration timeout) override;
  using Store::wait;

  const std::shared_ptr<Store>& underlying() const { return store_; }

 private:
  std::string full(const std::string& key) const { return prefix_ + "/" + key; }
  std::vector<std::string> full(const std::vector<std::string>& keys) const;

  std::string prefix_;
  std::shared_ptr<Store> store_;
};

}  // namespace weft
