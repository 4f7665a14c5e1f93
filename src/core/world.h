// World — what one process shares among all its groups: its world rank, the rendezvous
// store, the transport to every other rank, and (on the rank that serves it) the store server.
//
// Ownership: held by shared_ptr by every Communicator; destroyed with the last group. The
// destructor shuts the transport down (flush, goodbye), then releases the store, then stops
// the store server after the other ranks have left it (bounded wait). Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/deadline_store.h"
#include "transport/router.h"
#include "util/adaptive_spin.h"
#include "util/mutex.h"
#include "weft/store.h"
#include "weft/tcp_store_server.h"

namespace weft::core {

class Communicator;

struct WorldOptions {
  int rank = 0;
  int size = 1;
  std::shared_ptr<Store> store;
  std::chrono::milliseconds timeout{300'000};
  std::unique_ptr<TcpStoreServer> store_server;  // when this rank serves the store
  std::string route_hint;                        // a host whose route picks our interface
};

class World {
 public:
  // Rendezvous: listen, publish our address, wait (bounded by options.timeout) until every
  // rank has, learn their addresses. Throws kTimeout naming the ranks that never arrived.
  static std::shared_ptr<World> join(WorldOptions options);
  ~World();

  int rank() const { return rank_; }
  int size() const { return size_; }
  Store& store() { return *store_; }
  // The store for calls that must end by a deadline of their own (progress boards).
  DeadlineStore& deadline_store() { return *deadline_store_; }
  const std::shared_ptr<Store>& store_ptr() const { return store_; }
  transport::Transport& transport() { return *transport_; }
  // Whether the transport knows that rank died, left or was refused (groups shrinking without
  // it ask this: the transport itself knows nothing of groups).
  bool peer_failed(int rank) const { return transport_->peer_failed(rank); }
  // Makes the transport find out whether that rank is gone (peer_failed), without waiting: a
  // rank that shared a group's memory window only may have had no connection that could break.
  void probe_peer(int rank) { transport_->probe_peer(rank); }
  std::chrono::milliseconds timeout() const { return timeout_; }
  // The spin of a wait for a request: WEFT_SPIN_US, else 1 ms where the waiter completes it by
  // polling shared memory itself (a wake-up there costs more than the spin), and on a socket
  // what the socket waits of this rank have shown to be worth it (10 us to 400 us, from 50 us):
  // a message from another host takes a round trip of the network, which no constant fits.
  int64_t spin_us(bool completed_by_polling) const {
    if (spin_us_ >= 0) return spin_us_;
    return completed_by_polling ? 1000 : socket_spin_.spin_us();
  }
  // After a socket wait that outlasted its spin and slept for `slept`.
  void socket_wait_slept(std::chrono::steady_clock::duration slept) {
    socket_spin_.after_sleep(slept);
  }
  // WEFT_SPIN_US as set; < 0 asks waits that can adapt their spin to do so.
  int64_t configured_spin_us() const { return spin_us_; }
  const std::string& host_of(int rank) const { return hosts_[rank]; }

  // Communicators register to hear about failures that concern them; detach() waits until no
  // failure is being delivered to the communicator, so it may be destroyed right after.
  void attach(uint64_t context, Communicator* communicator);
  void detach(uint64_t context);

 private:
  World() = default;
  void on_peer_failed(int peer, std::shared_ptr<const Error> error);
  void on_context_aborted(uint64_t context, std::shared_ptr<const Error> error);

  int rank_ = 0;
  int size_ = 1;
  std::chrono::milliseconds timeout_{0};
  int64_t spin_us_ = 0;
  util::AdaptiveSpin socket_spin_{50, 10, 400};
  std::vector<std::string> hosts_;
  // Destruction order matters: transport first, then the store client, then the server.
  std::unique_ptr<TcpStoreServer> store_server_;
  std::shared_ptr<Store> store_;
  std::unique_ptr<DeadlineStore> deadline_store_;  // on store_
  std::unique_ptr<transport::Router> transport_;

  // Recursive: delivering a failure may abort a context, which delivers again on this thread.
  // Raw pointers, not shared ones: a failure delivered on the transport's thread must never
  // hold the last reference to a group (its destruction would join that very thread).
  util::RecursiveMutex mutex_;
  std::map<uint64_t, Communicator*> communicators_ WEFT_GUARDED_BY(mutex_);
};

}  // namespace weft::core
