// Router — the Transport a process uses: matching and peer liveness for every path under it.
//
// - Paths (path.h) are added in order of preference (the table of path kinds, path_table.h);
//   each peer is reached by the first that reaches it (shared memory for ranks of this host,
//   TCP for the others). A message to oneself is copied here.
// - Receives are posted here, never in a path: every path delivers what arrives into one
//   Matcher, so a receive from anyone takes the first message from any path, and the order per
//   (sender, context, tag) and mismatch detection hold whichever path a message took.
// - A path that notices departures itself (departure_watch.h: TCP by its connections, shared
//   memory by goodbyes in its rings and pidfds) watches the peers it reaches; a peer reached by
//   a path that cannot is watched by one that can, from the first message to or from it.
// - A path that reads payloads in place (streamed_arrivals.h: TCP) asks here where each one
//   goes, and may leave it in its socket until its receive comes (router_arrivals.cc). When any
//   path reports a peer lost, every path first delivers what that peer sent, then stops sending to
//   it; then what is pending with it fails, and a death is announced to every other peer before our
//   own waiters wake (a waiter that gives up says goodbye, and the news must be ahead of it).
// Thread-safety: every method is thread-safe. The Router never holds its lock while it calls
// into a path; paths call PathEvents with their connection's input lock held, so the lock
// order is: a path's input lock -> the Router's.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "transport/buffer_pool.h"
#include "transport/departure_watch.h"
#include "transport/matcher.h"
#include "transport/path.h"
#include "transport/streamed_arrivals.h"
#include "transport/transport.h"
#include "util/mutex.h"

namespace weft::transport {

class Router : public Transport, public StreamedArrivalEvents {
 public:
  Router(int rank, int world_size);
  // Shuts down (2 s to flush).
  ~Router() override;

  // In order of preference; a path that notices departures after any that cannot (it says
  // goodbye after they have flushed: a peer drains what we queued when it hears we left).
  // Before any post.
  void add_path(std::unique_ptr<Path> path);

  // --- Transport ---
  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  void post_send(const RequestPtr& request) override;
  void post_recv(const RequestPtr& request) override;
  bool cancel(Request& request, std::shared_ptr<const Error> reason) override;
  bool poll(Request& request) override;
  void start_polling(const Request& request) override;
  void stop_polling(const Request& request) override;
  bool completed_by_polling(const Request& request) const override;
  bool pollers_have_own_cores() const override;
  void abort_context(uint64_t context, std::shared_ptr<const Error> reason) override;
  void set_listener(TransportListener listener) override;
  std::string peer_address(int peer) const override;
  bool peer_failed(int peer) const override {
    return failed_[peer].load(std::memory_order_acquire);
  }
  void probe_peer(int peer) override;
  void shutdown(std::chrono::steady_clock::time_point flush_deadline) override;
  // Logs (INFO, transport) the path to each peer; once the rendezvous has set them.
  void log_paths() const;

  // --- PathEvents ---
  void deliver(const FrameHeader& header, const PayloadFill& fill) override;
  void peer_lost(int peer, std::shared_ptr<const Error> error, bool died) override;
  void context_aborted(uint64_t context, std::shared_ptr<const Error> error) override {
    fail_context(context, std::move(error));
  }
  News news_for_new_peer() const override;
  std::shared_ptr<const Error> first_death() const override;

  // --- StreamedArrivalEvents (router_arrivals.cc) ---
  Arrival begin_arrival(const FrameHeader& header, bool may_park) override;
  Arrival resume_arrival(UnexpectedMessage* message, bool give_up) override;
  void finish_arrival(UnexpectedMessage* message) override;
  void abandon_arrival(UnexpectedMessage* message, std::shared_ptr<const Error> why) override;

 private:
  // Every path that parks messages is told that one is wanted (no lock held).
  void wake_parked();
  // Whether a message nobody waits for, whose path can leave its payload in the socket, stays
  // there (begin_arrival): a large one, or any once its sender holds enough of our memory.
  bool should_park(const FrameHeader& header) const WEFT_REQUIRES(mutex_);
  // The path that carries messages to `peer` (not this rank; not kAnyPeer).
  Path* path_to(int peer) const;
  // Has a path that notices departures watch `peer`, once.
  void watch(int peer);
  // Why a send to `peer` cannot start (the peer failed, the context was aborted, we shut
  // down), or null. Cheap while nothing of that kind happened.
  std::shared_ptr<const Error> refusal_of(const Request& request);
  void send_to_self(const RequestPtr& request);
  // Fails what is pending in `context` here, tells the listener and every peer.
  void fail_context(uint64_t context, std::shared_ptr<const Error> error);

  // What a sender's messages that nobody took yet may hold of our memory. Beyond it, whatever
  // it sends next stays in its socket (where its path can leave it), and stays past the path's
  // time limit too, until receives take what we hold: a sender running ahead (the root of
  // back-to-back broadcasts) then waits for us through TCP's flow control instead of growing
  // our memory without end.
  static constexpr std::size_t kHeldPerSender = 8 * 1024 * 1024;

  const int rank_;
  const int world_size_;
  std::unique_ptr<std::atomic<bool>[]> failed_;   // per peer: set once, under mutex_
  std::unique_ptr<std::atomic<bool>[]> watched_;  // per peer: a departing path watches it
  // Something refuses sends (a failure, an abort, shutdown): post_send looks under the lock.
  std::atomic<bool> refusing_{false};

  mutable util::Mutex mutex_;
  BufferPool pool_;  // keeps kHeldPerSender of each size
  Matcher matcher_ WEFT_GUARDED_BY(mutex_){pool_};
  std::vector<std::shared_ptr<const Error>> failures_ WEFT_GUARDED_BY(mutex_);  // per peer
  std::map<uint64_t, std::shared_ptr<const Error>> aborted_contexts_ WEFT_GUARDED_BY(mutex_);
  std::shared_ptr<const Error> first_death_ WEFT_GUARDED_BY(mutex_);
  std::vector<std::pair<int, std::string>> deaths_ WEFT_GUARDED_BY(mutex_);
  // Deaths being announced right now: shutdown waits for them, so that our goodbye follows.
  int announcements_in_flight_ WEFT_GUARDED_BY(mutex_) = 0;
  TransportListener listener_ WEFT_GUARDED_BY(mutex_);
  bool shutting_down_ WEFT_GUARDED_BY(mutex_) = false;

  // Last: destroyed first, while what their threads call back into still exists. The
  // capabilities are the paths' own (Path::departures, Path::streamed_receiver), in path order.
  std::vector<std::unique_ptr<Path>> paths_;
  std::vector<DepartureWatch*> departure_watches_;
  std::vector<StreamedReceiver*> streamed_receivers_;
};

}  // namespace weft::transport
