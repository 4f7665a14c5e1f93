// RunnerClaim — lets one thread at a time run a group's collectives on this rank.
//
// A group's collectives share its shared-memory window, its eager lines and its rounds, so two
// of them must never run at once: not a synchronous call on the caller's thread beside the
// group's worker, nor synchronous calls from two threads. The caller's thread only tries (when
// it cannot claim, it queues its call for the worker); the worker waits for the claim.
//
// Most groups are used from one thread, and a claim taken with an atomic exchange is a full
// barrier on every small call. So the thread that issues a group's first collective, its sole
// issuer, claims with plain stores for as long as no other thread has issued one: until then
// the worker runs only calls the sole issuer queued, and the caller runs here only when its
// queue is idle. The first collective another thread issues (to run, or to queue) ends that
// for good, as an asymmetric Dekker handshake (util/remote_barrier.h): the sole issuer marks
// that it runs, then looks for the end; the other thread marks the end and runs a remote
// barrier. From then on every runner claims with the exchange (the worker always does), and
// the first to hold it waits until the sole issuer's call in progress, if any, has ended. So a
// thread that only queues a call does not wait for it. Where the kernel offers no remote
// barrier, every claim is an exchange from the start.
#pragma once

#include <pthread.h>

#include <atomic>

namespace weft::core {

class RunnerClaim {
 public:
  // How a claim is held (to release it the same way).
  enum class Hold { kNone, kAsSoleIssuer, kExchanged };

  RunnerClaim();

  // The caller's thread, for a synchronous call it would run at once (its queue is idle).
  // Never waits but for the end of the sole issuer's call in progress, once, when another
  // thread takes over. kNone: someone else holds the claim.
  Hold try_claim() {
    if (state_.load(std::memory_order_relaxed) == kAlone && is_sole_issuer()) {
      issuer_running_.store(true, std::memory_order_relaxed);
      // A compiler barrier only: end_sole_issue()'s remote barrier orders the store and load.
      std::atomic_signal_fence(std::memory_order_seq_cst);
      if (state_.load(std::memory_order_acquire) == kAlone) return Hold::kAsSoleIssuer;
      issuer_running_.store(false, std::memory_order_release);
    }
    end_sole_issue();
    if (!try_exchange()) return Hold::kNone;
    wait_for_sole_issuer();
    return Hold::kExchanged;
  }
  // The issuing thread, before it queues a collective for the worker.
  void before_queueing() {
    if (state_.load(std::memory_order_relaxed) == kAlone && is_sole_issuer()) return;
    end_sole_issue();
  }
  // The worker (for a call queued after before_queueing()): waits until the claim is free, then
  // takes it. It yields at first, then sleeps (50 us, doubling up to 1 ms), as what holds it is
  // a collective of another thread, which may take long.
  void claim();
  void release(Hold hold) {
    if (hold == Hold::kAsSoleIssuer) {
      issuer_running_.store(false, std::memory_order_release);
    } else if (hold == Hold::kExchanged) {
      held_.store(false, std::memory_order_release);
    }
  }

 private:
  // kEnding: a thread other than the sole issuer runs the remote barrier; kEnded: it ran (the
  // sole issuer starts no call without the exchange), but its call in progress may still run;
  // kShared: that call has ended too.
  enum State : int { kAlone, kEnding, kEnded, kShared };

  // The first thread to ask becomes the sole issuer.
  bool is_sole_issuer() {
    const pthread_t me = pthread_self();
    pthread_t issuer = sole_issuer_.load(std::memory_order_relaxed);
    if (issuer == me) return true;
    return issuer == pthread_t{} &&
           sole_issuer_.compare_exchange_strong(issuer, me, std::memory_order_relaxed);
  }
  // Another thread issues a collective: from now on, every claim is an exchange. Waits only
  // for the remote barrier.
  [[gnu::noinline]] void end_sole_issue();
  // Under the exchange, before running anything: once the sole issue has ended, waits until the
  // sole issuer's call in progress has ended. (While it has not ended, an exchange holder is
  // the worker running a call the sole issuer queued: then the sole issuer runs nothing.)
  void wait_for_sole_issuer() {
    int state = state_.load(std::memory_order_acquire);
    if (state != kShared && state != kAlone) finish_sole_issue();
  }
  [[gnu::noinline]] void finish_sole_issue();
  bool try_exchange() {
    return !held_.load(std::memory_order_relaxed) &&
           !held_.exchange(true, std::memory_order_acquire);
  }

  std::atomic<int> state_{kAlone};
  std::atomic<pthread_t> sole_issuer_{};
  std::atomic<bool> issuer_running_{false};  // the sole issuer runs a call (without exchange)
  std::atomic<bool> held_{false};            // claimed by exchange
};

// Holds a claim until it leaves scope.
class HeldRunnerClaim {
 public:
  HeldRunnerClaim(RunnerClaim& claim, RunnerClaim::Hold hold) : claim_(claim), hold_(hold) {}
  ~HeldRunnerClaim() { claim_.release(hold_); }
  HeldRunnerClaim(const HeldRunnerClaim&) = delete;
  HeldRunnerClaim& operator=(const HeldRunnerClaim&) = delete;

 private:
  RunnerClaim& claim_;
  RunnerClaim::Hold hold_;
};

}  // namespace weft::core
