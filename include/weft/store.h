// weft::Store — the rendezvous key-value store, with torch.distributed's Store shape.
//
// Contract: used for bootstrap, group creation and liveness only, never on the data path.
// Every implementation is safe to call from several threads at once. Values are bytes; add()
// keeps counters as decimal text, as torch does, so a counter read with get() reads "3".
// Blocking calls (get, wait, multi_get) wait until the keys exist or the store's timeout (or
// the call's own) passes, then throw weft::Error(kTimeout) naming the missing keys.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "weft/export.h"

namespace weft {

using Bytes = std::vector<uint8_t>;

WEFT_API Bytes to_bytes(const std::string& text);
WEFT_API std::string to_string(const Bytes& bytes);

class WEFT_API Store {
 public:
  using Duration = std::chrono::milliseconds;
  static constexpr Duration kDefaultTimeout{300'000};

  virtual ~Store() = default;

  virtual void set(const std::string& key, const Bytes& value) = 0;
  // Blocks until the key exists (or the timeout passes).
  virtual Bytes get(const std::string& key) = 0;
  // Adds delta to the counter at key (created at 0) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // Sets key to desired when its value equals expected (or when the key is missing and
  // expected is empty); returns the value the key holds afterwards.
  virtual Bytes compare_set(const std::string& key, const Bytes& expected,
                            const Bytes& desired) = 0;
  // Returns whether the key existed.
  virtual bool delete_key(const std::string& key) = 0;
  // Whether all keys exist now; never blocks.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  virtual int64_t num_keys() = 0;
  // Blocks until all keys exist.
  virtual void wait(const std::vector<std::string>& keys, Duration timeout) = 0;
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout()); }
  // Blocks until all keys exist; values in the order of keys.
  virtual std::vector<Bytes> multi_get(const std::vector<std::string>& keys) = 0;
  virtual void multi_set(const std::vector<std::string>& keys,
                         const std::vector<Bytes>& values) = 0;

  Duration timeout() const { return timeout_.load(std::memory_order_relaxed); }
  virtual void set_timeout(Duration timeout) { timeout_.store(timeout, std::memory_order_relaxed); }

 protected:
  // Atomic, as the contract above asks: ranks that are threads of one process may share a
  // store, and each one's init sets its rendezvous timeout on it while the others call it.
  std::atomic<Duration> timeout_{kDefaultTimeout};
};

// An in-process store for tests and for ranks that are threads of one process.
class MemoryStore;
// Keys of another store under "prefix/": one per group.
class PrefixStore;
// A store kept in one file on a file system every rank can reach.
class FileStore;
// Client of a TcpStoreServer.
class TcpStore;
// The server side, run by rank 0 or by weftrun.
class TcpStoreServer;

}  // namespace weft
