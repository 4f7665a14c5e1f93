// ShmPath — the shared-memory path (path.h) under the Router: messages between ranks of
// one host.
//
// Every rank owns a Mailbox with a ring per sender. A message of up to kInlineBytes goes into
// the receiver's ring whole (one copy in, one copy out, no system call when the receiver is
// busy waiting); one of up to kSingleCopyBytes in chunks through the ring. A larger one goes
// as an offer: the receiver copies it straight out of the
// sender's buffer with process_vm_readv (one copy) and marks the offer done in the sender's
// mailbox; the send completes then. Where the kernel refuses cross-memory attach (probed once
// per peer at start-up), large messages are cut into chunks copied through the ring.
//
// Progress: threads waiting on requests poll the rings themselves (start_polling/progress/
// stop_polling); a progress thread per rank, asleep on the mailbox's futex unless woken,
// moves messages along when nobody polls. Arrived messages go to the Router (PathEvents), which
// matches them with posted receives (receives are never posted here).
// Liveness: this path notices a same-host peer's departure itself, from the moment the Router
// asks it to watch the peer or a message goes either way: a peer that shuts down cleanly says
// goodbye in the ring it writes to us (RingControl::sender_left, after its last record); a peer
// whose process ends without that died (a pidfd, process_watch.h; ranks that are threads of one
// process only ever leave). The progress thread looks at every turn of its loop: goodbyes each
// time, processes at most every kDepartureCheck (asleep, it turns every kProgressTick at least).
// What the Router learns that every rank must know (a death, an aborted context) travels to the
// other ranks of this host as news records in the rings (shm_record.h), so that same-host peers
// need no TCP connection at all. drain_from() delivers what a lost peer had sent and
// drop_peer() hands back what we still have queued for it. A peer that writes
// what no weft rank writes in a ring (a length past the ring, an unknown kind, a slot out of
// range: shm_record.h, ring_record.h) is reported lost (PathEvents::peer_lost), naming the
// field, the value and the limit; its ring is not read again.
// Thread-safety: every public method is thread-safe. Lock order: a peer's inbound lock, then
// the Router's or the news lock; a peer's outbound lock, then the offers lock.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "transport/buffer_pool.h"
#include "transport/departure_watch.h"
#include "transport/path.h"
#include "transport/request.h"
#include "transport/shm/mailbox.h"
#include "transport/shm/process_watch.h"
#include "transport/shm/shm_record.h"
#include "util/mutex.h"
#include "util/ring_deque.h"

namespace weft::transport {

struct ShmPathOptions {
  int rank = 0;
  int world_size = 1;
  std::string job_token;
  std::size_t ring_capacity = std::size_t{128} << 10;
  bool single_copy = true;  // offer large messages for process_vm_readv where the kernel allows
};

class ShmPath final : public Path, public DepartureWatch {
 public:
  static constexpr std::size_t kInlineBytes = 16 << 10;
  // From here on a message is offered for a single-copy read; below, copying it through the
  // ring in chunks costs less than the system call and the page pinning.
  static constexpr std::size_t kSingleCopyBytes = 256 << 10;

  // `events` outlives this path (the Router that owns it).
  ShmPath(const ShmPathOptions& options, PathEvents& events);
  ~ShmPath() override;

  // What the rendezvous publishes for same-host peers.
  MailboxAddress address() const { return mailbox_.address(); }
  // After the rendezvous, once: the mailboxes of the other ranks of this host (nullopt for the
  // rest). Maps them, probes cross-memory attach, starts the progress thread, and logs (INFO)
  // how each kind of message will travel.
  void set_local_peers(const std::vector<std::optional<MailboxAddress>>& mailboxes);
  const char* name() const override { return "shm"; }
  // Whether sends to `peer` go through shared memory. So does a same-host peer that was gone
  // before we could map its mailbox: what it wrote to us is in ours, its goodbye too, and only
  // this path can tell whether it left or died (a TCP dial would just be refused).
  bool reaches(int peer) const override {
    if (peer < 0 || peer >= options_.world_size) return false;
    const Outbound& out = *outbound_[peer];
    return out.reachable.load(std::memory_order_acquire) ||
           out.gone_before_reached.load(std::memory_order_acquire);
  }

  DepartureWatch* departures() override { return this; }
  // Watches a peer this path reaches (every same-host peer we talk to is watched anyway).
  bool watch(int peer) override;

  bool has_local_peers() const { return !local_peers_.empty(); }
  // The ranks of this host are no more than its cores.
  bool pollers_have_own_cores() const override { return ranks_have_own_cores_; }

  void post_send(const RequestPtr& request) override;
  // Withdraws a send that has not reached its receiver; false when it is too late.
  bool cancel_send(Request& request, const std::shared_ptr<const Error>& reason) override;

  // Moves everything along (progress()); says it moved nothing: a same-host waiter spins
  // anyway (completed_by_polling).
  bool poll(Request* waited_for) override;
  // A waiter polls the rings: writers need not wake the progress thread meanwhile.
  void start_polling(const Request* waited_for) override;
  void stop_polling(const Request* waited_for) override;
  // Receives from this host's ranks, and from anyone while this host has other ranks.
  bool completed_by_polling(const Request& request) const override;
  // Moves everything along without blocking: reads every ring, writes queued sends, completes
  // sends whose offers were taken. Returns whether anything moved.
  bool progress();

  // Delivers what `peer` has sent.
  void drain_from(int peer) override;
  // Hands back what is queued for the peer; offers it has not taken are failed with it.
  void drop_peer(int peer, const std::shared_ptr<const Error>& why,
                 std::vector<RequestPtr>& victims) override;

  // News for every same-host peer this path reaches but `peer` (a news record in its ring).
  void announce_death(int peer, const std::string& text) override;
  void announce_abort(uint64_t context, const std::string& text) override;

  // Writes what is queued (until the deadline), says goodbye in every ring it writes, stops the
  // progress thread, fails the rest.
  void shutdown(std::chrono::steady_clock::time_point flush_deadline) override;

 private:
  struct PendingSend {
    RequestPtr request;  // null once cancelled half-written (the rest goes from `owned`)
    std::size_t written = 0;
    bool started = false;
    std::vector<uint8_t> owned;
    // A news record (no request): this header, and `owned` as its text.
    std::optional<FrameHeader> news;
  };
  // News read from a ring, reported once no lock of ours is held.
  struct ReadNews {
    int from = 0;
    FrameHeader header;
    std::string text;
  };
  struct Outbound {
    util::Mutex mutex;
    std::atomic<bool> reachable{false};
    // Its process ended, or it said goodbye, before we mapped its mailbox: sends to it fail with
    // `failure`, and its departure is reported at the progress thread's first turn.
    std::atomic<bool> gone_before_reached{false};
    // The peer's. Not guarded: the receiving side wakes the peer and reads its offers here.
    Mailbox mailbox;
    ShmRing ring WEFT_GUARDED_BY(mutex);  // the peer's ring for us: we produce
    // Sends waiting for room in `ring`, which a fast sender fills often: a queue that keeps its
    // capacity, so that waiting costs no allocation once warm.
    util::RingDeque<PendingSend> queue WEFT_GUARDED_BY(mutex);
    std::shared_ptr<const Error> failure WEFT_GUARDED_BY(mutex);
    // The peer broke `ring`, and was failed for it.
    bool reported_broken WEFT_GUARDED_BY(mutex) = false;
  };
  struct Inbound {
    util::Mutex mutex;
    // Our ring for the peer: we consume, with `mutex` held. Not guarded: progress() peeks at
    // empty() (the producer's atomic tail) without it, to skip idle peers.
    ShmRing ring;
    // A message being copied through in chunks.
    FrameHeader assembling WEFT_GUARDED_BY(mutex);
    BufferPool::Buffer assembled WEFT_GUARDED_BY(mutex);
    std::size_t assembled_capacity WEFT_GUARDED_BY(mutex) = 0;
    std::size_t assembled_bytes WEFT_GUARDED_BY(mutex) = 0;
    bool in_chunks WEFT_GUARDED_BY(mutex) = false;
    // The first death the peer told us of: why it will most likely leave.
    std::optional<ReadNews> first_death_told WEFT_GUARDED_BY(mutex);
    // The peer wrote something broken (`broken_because`, set before `broken`): the ring is not
    // read again, and the peer is failed once (`reported`), with no lock of ours held. Not
    // guarded: written with `mutex` held, read after `broken` is seen set (release/acquire).
    std::atomic<bool> broken{false};
    std::atomic<bool> reported{false};
    std::string broken_because;
  };
  struct Offer {
    RequestPtr request;
    int peer = 0;
    int slot = 0;
    uint32_t generation = 0;
  };

  // --- sending (the peer's outbound lock held) ---
  bool flush_locked(int peer, Outbound& out) WEFT_REQUIRES(out.mutex);
  // Writes as much of the send as fits; true when it left the queue (written, or offered).
  bool write_send(int peer, Outbound& out, PendingSend& send) WEFT_REQUIRES(out.mutex);
  // Takes offers_mutex_ (after the outbound lock).
  bool try_offer(int peer, Outbound& out, const FrameHeader& header, Request& request,
                 const RequestPtr& owner) WEFT_REQUIRES(out.mutex) WEFT_EXCLUDES(offers_mutex_);
  // --- receiving (the peer's inbound lock held) ---
  bool drain_locked(int peer, Inbound& in) WEFT_REQUIRES(in.mutex);
  // False when the record is broken (in.broken_because says how).
  bool handle_record(int peer, Inbound& in, const ShmRing::Record& record) WEFT_REQUIRES(in.mutex);
  void deliver_copy(const FrameHeader& header, const uint8_t* payload);
  void take_offer(int peer, const FrameHeader& header, const OfferBody& offer);
  // --- news and departures (no lock of ours held) ---
  void announce(int skipped_peer, const FrameHeader& header, const std::string& text);
  void report_news() WEFT_EXCLUDES(news_mutex_);
  static std::string reported(const ReadNews& news);
  // The death a news record tells of, as the error its waiters fail with; null if it names no
  // other rank of the job.
  std::shared_ptr<const Error> death_told(const ReadNews& news) const;
  // Whether a same-host peer whose mailbox we could not map has already gone.
  bool gone(int peer, pid_t pid) const;
  // Keeps such a peer on this path (before the progress thread starts): sends to it fail, its
  // departure is read from our own mailbox.
  void keep_gone_peer(int peer, pid_t pid, const std::string& why_unmapped);
  // Reports each watched peer that said goodbye, or whose process ended, once.
  void check_departures();
  void report_departure(int peer, bool died);
  // The cause a clean departure is reported with; null if no death is known.
  std::shared_ptr<const Error> cause_of_leaving(int peer);
  // --- a peer that broke a ring (no lock of ours held) ---
  void fail_broken_ring_from(int peer);
  void fail_broken_ring_for(int peer);
  void fail_broken_peer(int peer, const std::string& what);
  // --- offers ---
  bool complete_offers(bool wait_for_lock) WEFT_EXCLUDES(offers_mutex_);
  // --- progress thread ---
  void run_progress();

  ShmPathOptions options_;
  PathEvents& events_;
  Mailbox mailbox_;
  std::vector<std::unique_ptr<Outbound>> outbound_;
  std::vector<std::unique_ptr<Inbound>> inbound_;
  BufferPool pool_;  // buffers of messages copied through in chunks
  std::vector<int> local_peers_;
  bool ranks_have_own_cores_ = true;
  // Sends queued for lack of room plus offers not yet taken: an idle poll looks at nothing else.
  std::atomic<int> unfinished_sends_{0};

  util::Mutex offers_mutex_;
  std::vector<Offer> offers_ WEFT_GUARDED_BY(offers_mutex_);
  std::vector<int> free_slots_ WEFT_GUARDED_BY(offers_mutex_);
  uint32_t generations_[kOfferSlots] WEFT_GUARDED_BY(offers_mutex_) = {};

  // By world rank: which peers' departures matter to us, and whose were reported.
  std::unique_ptr<std::atomic<bool>[]> watched_;
  std::vector<ProcessWatch> processes_;
  std::vector<char> departed_;                                  // the progress thread's
  std::chrono::steady_clock::time_point last_departure_check_;  // the progress thread's

  util::Mutex news_mutex_;
  std::vector<ReadNews> news_ WEFT_GUARDED_BY(news_mutex_);
  std::atomic<bool> has_news_{false};

  std::atomic<bool> stopping_{false};
  std::thread progress_thread_;
};

}  // namespace weft::transport
