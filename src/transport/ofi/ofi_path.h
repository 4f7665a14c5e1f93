// OfiPath — the path (path.h) over a libfabric reliable-datagram endpoint (ofi_endpoint.h):
// InfiniBand and RoCE (verbs), AWS EFA, Slingshot (cxi), Omni-Path (psm3, opx), and, for
// tests and for hosts without a fabric, libfabric's tcp provider.
//
// Messages: every message goes as one or more chunks of at most kChunkBytes, each a fi_sendmsg
// of a small chunk header (ofi_wire.h), the message's frame header on its first chunk, and the
// payload straight from the sender's buffer (no copy on the sending side). The receiver keeps
// kSlots buffers of one chunk each posted at all times; an arrived chunk is handed to the
// Router whole (PathEvents::deliver) or, for a message of several, gathered into a buffer of
// its own first. The endpoint delivers a sender's chunks in the order they were sent
// (FI_ORDER_SAS), so a message's chunks, and the messages between two ranks, arrive in order.
// NOTE(ofi-rendezvous): large messages are to go by RMA (the receiver reads the payload
// straight from the registered send buffer) instead of chunks copied through the slots.
//
// Progress: libfabric's providers mostly progress only when their completion queue is read.
// A thread that waits on a request reads it itself (poll); a progress thread of the path reads
// it when nobody polls (waiting in fi_cq_sread where the provider can, else napping between
// reads). One thread at a time reads the queue and delivers what it read, so that delivery
// keeps the order of arrival.
//
// Failures: this path does not notice by itself that a peer died (a reliable-datagram
// endpoint has no connection to lose): it has no DepartureWatch, and the Router has TCP watch
// every peer it carries. A send whose completion reports an error fails, and its peer is
// reported lost (died), naming libfabric's error. Shutdown flushes queued sends until the
// deadline, then closes the endpoint; what is left fails with kAborted.
//
// Thread-safety: every public method is thread-safe. Lock order: send_mutex_ -> address_mutex_;
// the progress claim is taken before either and never waited for while one is held.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "transport/ofi/ofi_endpoint.h"
#include "transport/path.h"
#include "util/mutex.h"

namespace weft::transport {

struct OfiPathOptions {
  int rank = 0;
  int world_size = 1;
  OfiEndpointOptions endpoint;
};

class OfiPath final : public Path {
 public:
  // Payload bytes per chunk, and receive buffers kept posted.
  static constexpr std::size_t kChunkBytes = 64 * 1024;
  static constexpr int kSlots = 32;

  // Opens the endpoint (throws weft::Error(kSystem) when no provider fits), posts the receive
  // buffers and starts the progress thread. `events` outlives this path.
  OfiPath(const OfiPathOptions& options, PathEvents& events);
  ~OfiPath() override;

  // This endpoint's address for peers (ofi_path_kind.cc publishes it as hex).
  std::vector<uint8_t> address() const { return endpoint_->name(); }
  const std::string& provider() const { return provider_; }

  // After the rendezvous, once: which peers this path carries (`reached`, by rank), the
  // addresses known already (by rank), and how to read another's on first use (may throw).
  using AddressLookup = std::function<std::optional<std::vector<uint8_t>>(int peer)>;
  void set_peers(std::vector<bool> reached, std::vector<std::optional<std::vector<uint8_t>>> known,
                 AddressLookup lookup);

  const char* name() const override { return "ofi"; }
  bool reaches(int peer) const override;
  void post_send(const RequestPtr& request) override;
  bool cancel_send(Request& request, const std::shared_ptr<const Error>& reason) override;
  bool poll(Request* waited_for) override;
  void start_polling(const Request* waited_for) override;
  void stop_polling(const Request* waited_for) override;
  bool completed_by_polling(const Request& request) const override;
  void drain_from(int peer) override;
  void drop_peer(int peer, const std::shared_ptr<const Error>& why,
                 std::vector<RequestPtr>& victims) override;
  void shutdown(std::chrono::steady_clock::time_point flush_deadline) override;

 private:
  struct Operation;
  struct SendJob;
  struct SentChunk;
  struct ReceiveSlot;
  struct Gathering;

  // The peer's endpoint handle, inserted on first use; throws weft::Error naming the peer.
  fi_addr_t address_of(int peer);
  // Posts what the queues hold, in order per peer, until the endpoint pushes back. Returns
  // whether it posted anything. Jobs fully posted move to in_flight_.
  bool post_queued() WEFT_REQUIRES(send_mutex_);
  // Posts the job's next chunks; false when the endpoint pushed back (try again later).
  bool post_chunks(const std::shared_ptr<SendJob>& job) WEFT_REQUIRES(send_mutex_);
  // Reads the completion queue and handles what it read (the caller holds the claim).
  bool progress_claimed(int timeout_ms);
  void handle_send_done(SentChunk* chunk, std::shared_ptr<const Error> error);
  // A chunk completed: handled now if it is its sender's next, else held until it is.
  void handle_completed_receive(ReceiveSlot& slot, std::size_t length);
  void handle_arrival(const uint8_t* bytes, std::size_t length);
  void repost(ReceiveSlot& slot);
  bool try_claim() {
    if (progressing_.exchange(true, std::memory_order_acquire)) return false;
    claim_holder_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    return true;
  }
  void release_claim() {
    claim_holder_.store(std::thread::id(), std::memory_order_relaxed);
    progressing_.store(false, std::memory_order_release);
  }
  void progress_loop();
  std::shared_ptr<const Error> peer_error(int peer, const std::string& what) const;

  const OfiPathOptions options_;
  PathEvents& events_;
  std::unique_ptr<OfiEndpoint> endpoint_;  // closed by shutdown

  // Set once by set_peers, before any post.
  std::vector<bool> reached_;
  AddressLookup lookup_;

  mutable util::Mutex address_mutex_;
  std::vector<std::optional<std::vector<uint8_t>>> known_ WEFT_GUARDED_BY(address_mutex_);
  std::vector<std::optional<fi_addr_t>> addresses_ WEFT_GUARDED_BY(address_mutex_);
  std::string provider_;

  util::Mutex send_mutex_;
  std::vector<std::deque<std::shared_ptr<SendJob>>> queues_ WEFT_GUARDED_BY(send_mutex_);
  std::vector<uint32_t> next_sequence_ WEFT_GUARDED_BY(send_mutex_);  // per receiver
  bool closed_ WEFT_GUARDED_BY(send_mutex_) = false;
  // Posted chunks whose completion has not been read: failed and freed at shutdown.
  std::unordered_set<SentChunk*> chunks_in_flight_ WEFT_GUARDED_BY(send_mutex_);
  std::atomic<int> queued_jobs_{0};

  // The progress claim: whoever holds it reads the queue and delivers (in order).
  std::atomic<bool> progressing_{false};
  std::atomic<std::thread::id> claim_holder_{};
  std::vector<std::unique_ptr<ReceiveSlot>> slots_;    // read under the claim
  std::vector<ReceiveSlot*> slots_to_repost_;          // the endpoint pushed back; under the claim
  std::vector<std::unique_ptr<Gathering>> gathering_;  // per sender, under the claim
  // Per sender, under the claim: the sequence number of the chunk to handle next, and the
  // chunks that completed ahead of it (their slots are posted again once handled).
  std::vector<uint32_t> expected_sequence_;
  std::vector<std::map<uint32_t, std::pair<ReceiveSlot*, std::size_t>>> early_chunks_;
  std::atomic<int> pollers_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> shut_down_{false};
  std::thread progress_thread_;
};

}  // namespace weft::transport
