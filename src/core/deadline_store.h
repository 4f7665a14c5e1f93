// DeadlineStore — the job's store as a wait's diagnosis uses it: every call ends by the
// caller's deadline, whether the store answers or not.
//
// A rank whose link to the store went down must still fail its collective at its timeout, and
// name the peer, rather than sit in a store call for the store's own (much longer) timeout.
// And a report must not wait behind another thread's long blocking call on the shared client.
// So, when the job's store is a TcpStore, these calls go through a connection of their own,
// made at the first call (only a rank whose wait got slow ever makes one) and bounded per call.
// Any other store (a FileStore, torchrun's agent store, one given by the application) is called
// as it is, bounded by its own timeout only.
//
// Thread-safe: calls are serialized, and a call that cannot get its turn by its deadline fails
// with kTimeout like one the store did not answer in time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "util/mutex.h"
#include "weft/store.h"
#include "weft/tcp_store.h"

namespace weft::core {

class DeadlineStore {
 public:
  using Clock = std::chrono::steady_clock;

  // `store` outlives this object.
  explicit DeadlineStore(Store& store);
  ~DeadlineStore();

  void set(const std::string& key, const Bytes& value, Clock::time_point deadline);
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired,
                    Clock::time_point deadline);
  int64_t add(const std::string& key, int64_t delta, Clock::time_point deadline);
  // The key's value once it exists.
  Bytes wait_and_get(const std::string& key, Clock::time_point deadline);

  // The timeout to give a TcpStore call so that it ends by `time_left`
  // (TcpStore::answer_bound); zero when there is not time enough for any call.
  static std::chrono::milliseconds timeout_within(std::chrono::milliseconds time_left);

 private:
  // The store for a call that must end by `deadline`, its timeout set accordingly. Lock held.
  Store& store_for(Clock::time_point deadline, const char* op) WEFT_REQUIRES(mutex_);
  // `call(store)` with the lock, by `deadline`.
  template <typename Call>
  auto bounded(Clock::time_point deadline, const char* op, Call&& call);

  Store& shared_;
  TcpStore* tcp_;  // shared_ as a TcpStore, or null
  util::TimedMutex mutex_;
  std::unique_ptr<TcpStore> own_ WEFT_GUARDED_BY(mutex_);
};

}  // namespace weft::core
