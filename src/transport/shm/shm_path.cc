#include "transport/shm/shm_path.h"

#include <cerrno>
#include <cstring>

#include "transport/shm/cross_memory.h"
#include "transport/shm/shm_record.h"
#include "util/futex.h"
#include "util/log.h"

namespace weft::transport {

namespace {

constexpr std::size_t kChunkBytes = 32 << 10;
constexpr auto kProgressTick = std::chrono::milliseconds(50);
// How often the progress thread asks whether watched peers' processes still run (a system call
// per peer); goodbyes, a word in shared memory, are read at every turn.
constexpr auto kDepartureCheck = std::chrono::milliseconds(10);

uint64_t offer_word(uint32_t generation, OfferState state) {
  return (uint64_t{generation} << 2) | static_cast<uint64_t>(state);
}

std::shared_ptr<const Error> peer_error(int peer, ErrorCode code, const std::string& what) {
  ErrorContext context;
  context.peer = peer;
  return std::make_shared<const Error>(code, what, context);
}

}  // namespace

ShmPath::ShmPath(const ShmPathOptions& options, PathEvents& events)
    : options_(options),
      events_(events),
      watched_(new std::atomic<bool>[options.world_size]()),
      processes_(options.world_size),
      departed_(options.world_size, 0) {
  mailbox_ = Mailbox::create(options.world_size, options.ring_capacity, options.job_token);
  for (int peer = 0; peer < options.world_size; ++peer) {
    outbound_.push_back(std::make_unique<Outbound>());
    inbound_.push_back(std::make_unique<Inbound>());
    // Our own rings: readable before we know who our neighbours are (drain_from may come first).
    inbound_.back()->ring = mailbox_.ring(peer);
  }
  for (int slot = kOfferSlots - 1; slot >= 0; --slot) free_slots_.push_back(slot);
}

ShmPath::~ShmPath() { shutdown(std::chrono::steady_clock::now() + std::chrono::seconds(2)); }

void ShmPath::set_local_peers(const std::vector<std::optional<MailboxAddress>>& mailboxes) {
  std::string over_shm, refused, gone_already, single_copy_refused;
  for (int peer = 0; peer < options_.world_size; ++peer) {
    if (peer == options_.rank || !mailboxes[peer]) continue;
    const MailboxAddress& address = *mailboxes[peer];
    local_peers_.push_back(peer);
    Outbound& out = *outbound_[peer];
    try {
      out.mailbox =
          Mailbox::attach(address, options_.world_size, options_.ring_capacity, options_.job_token);
    } catch (const Error& e) {
      if (gone(peer, address.pid)) {
        // A fast peer can send to us, hear of a death and leave while we still start.
        keep_gone_peer(peer, address.pid, e.message());
        gone_already += " " + std::to_string(peer);
        continue;
      }
      refused += " " + std::to_string(peer) + " (" + e.message() + ")";
      continue;
    }
    {
      // No other thread uses `out` yet; the lock is for the analysis (and costs nothing).
      util::MutexLock lock(out.mutex);
      out.ring = out.mailbox.ring(options_.rank);
    }
    processes_[peer] = ProcessWatch(address.pid);
    // Published last: a thread that sees it may use the mailbox and the ring.
    out.reachable.store(true, std::memory_order_release);
    over_shm += " " + std::to_string(peer);
    if (!options_.single_copy) continue;
    // We read from the peer when it sends to us: say so in our ring for it.
    int error = probe_process_memory(address.pid, address.address, out.mailbox.header().magic);
    if (error == 0) {
      mailbox_.ring(peer).control().receiver_can_pull.store(1, std::memory_order_release);
    } else if (single_copy_refused.empty()) {
      single_copy_refused = std::strerror(error);
    }
  }
  if (local_peers_.empty()) return;
  ranks_have_own_cores_ = local_peers_.size() + 1 <= std::thread::hardware_concurrency();
  std::string me = "rank " + std::to_string(options_.rank);
  if (!over_shm.empty()) {
    std::string large =
        !options_.single_copy ? "copied through shared memory (WEFT_SHM_SINGLE_COPY=off)"
        : single_copy_refused.empty()
            ? "copied through in chunks, and from " + std::to_string(kSingleCopyBytes) +
                  " bytes read by the receiver straight from the sender (process_vm_readv, one "
                  "copy)"
            : "copied through shared memory (process_vm_readv refused: " + single_copy_refused +
                  ")";
    util::log_info(util::Subsys::kShm, [&] {
      return me + " talks to same-host ranks" + over_shm +
             " through shared memory: messages up to " + std::to_string(kInlineBytes) +
             " bytes through rings, larger ones " + large;
    });
  }
  if (!refused.empty()) {
    util::log_info(util::Subsys::kShm,
                   [&] { return me + " sends to same-host ranks" + refused + " over TCP"; });
  }
  if (!gone_already.empty()) {
    util::log_info(util::Subsys::kShm, [&] {
      return me + ": same-host ranks" + gone_already +
             " were gone before it started; their departure is read from its own mailbox";
    });
  }
  progress_thread_ = std::thread([this] { run_progress(); });
}

// ------------------------------------------------------------------------------------------
// Sending
// ------------------------------------------------------------------------------------------

bool ShmPath::watch(int peer) {
  if (!reaches(peer)) return false;
  if (!watched_[peer].load(std::memory_order_relaxed)) {
    watched_[peer].store(true, std::memory_order_relaxed);
  }
  return true;
}

void ShmPath::post_send(const RequestPtr& request) {
  int peer = request->peer;
  watch(peer);
  Outbound& out = *outbound_[peer];
  util::UniqueLock lock(out.mutex);
  if (out.failure || stopping_.load()) {
    auto error = out.failure ? out.failure
                             : std::make_shared<const Error>(ErrorCode::kAborted,
                                                             "the transport is shutting down");
    lock.unlock();
    request->fail(error);
    return;
  }
  if (out.queue.empty()) {
    // The usual case: straight into the ring, no queue.
    PendingSend send{request};
    uint64_t tail_before = out.ring.control().tail.load(std::memory_order_relaxed);
    bool written = write_send(peer, out, send);
    if (out.ring.control().tail.load(std::memory_order_relaxed) != tail_before) {
      out.mailbox.notify();
    }
    if (written) return;
    out.queue.push_back(std::move(send));
  } else {
    out.queue.push_back(PendingSend{request});
  }
  unfinished_sends_.fetch_add(1, std::memory_order_relaxed);
  flush_locked(peer, out);
  if (!out.ring.fault()) return;
  lock.unlock();
  fail_broken_ring_for(peer);
}

bool ShmPath::flush_locked(int peer, Outbound& out) {
  uint64_t tail_before = out.ring.control().tail.load(std::memory_order_relaxed);
  while (!out.queue.empty()) {
    if (!write_send(peer, out, out.queue.front())) {
      // The receiver wakes us when it makes room; look once more in case it already did.
      out.ring.control().producer_waiting.store(1, std::memory_order_seq_cst);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (!write_send(peer, out, out.queue.front())) break;
    }
    out.queue.pop_front();
    unfinished_sends_.fetch_sub(1, std::memory_order_relaxed);
  }
  // Part of a long message counts too: the receiver must come and make room for the rest.
  bool wrote = out.ring.control().tail.load(std::memory_order_relaxed) != tail_before;
  if (wrote) out.mailbox.notify();
  return wrote;
}

bool ShmPath::write_send(int peer, Outbound& out, PendingSend& send) {
  if (send.news) {
    uint8_t* body = out.ring.reserve(kNewsRecord, kFrameHeaderBytes + send.owned.size());
    if (!body) return false;
    encode(*send.news, body);
    if (!send.owned.empty()) {
      std::memcpy(body + kFrameHeaderBytes, send.owned.data(), send.owned.size());
    }
    out.ring.commit();
    return true;
  }
  Request* request = send.request.get();
  std::size_t bytes = request ? request->bytes : send.owned.size();
  const uint8_t* payload =
      send.owned.empty() ? static_cast<const uint8_t*>(request->data) : send.owned.data();
  if (!send.started) {
    FrameHeader header = data_header(*request, options_.rank);
    if (bytes <= kInlineBytes) {
      uint8_t* body = out.ring.reserve(kInlineRecord, kFrameHeaderBytes + bytes);
      if (!body) return false;
      encode(header, body);
      if (bytes) std::memcpy(body + kFrameHeaderBytes, payload, bytes);
      out.ring.commit();
      request->complete();
      return true;
    }
    if (options_.single_copy && bytes >= kSingleCopyBytes &&
        out.ring.control().receiver_can_pull.load(std::memory_order_acquire)) {
      if (try_offer(peer, out, header, *request, send.request)) return true;
    }
    std::size_t chunk = std::min(bytes, kChunkBytes);
    uint8_t* body = out.ring.reserve(kFirstChunkRecord, kFrameHeaderBytes + chunk);
    if (!body) return false;
    encode(header, body);
    std::memcpy(body + kFrameHeaderBytes, payload, chunk);
    out.ring.commit();
    send.written = chunk;
    send.started = true;
  }
  while (send.written < bytes) {
    std::size_t chunk = std::min(bytes - send.written, kChunkBytes);
    uint8_t* body = out.ring.reserve(kNextChunkRecord, chunk);
    if (!body) return false;
    std::memcpy(body, payload + send.written, chunk);
    out.ring.commit();
    send.written += chunk;
  }
  if (request) request->complete();
  return true;
}

bool ShmPath::try_offer(int peer, Outbound& out, const FrameHeader& header, Request& request,
                        const RequestPtr& owner) {
  util::MutexLock lock(offers_mutex_);
  if (free_slots_.empty()) return false;  // many offers in flight: copy this one through
  uint8_t* body = out.ring.reserve(kOfferRecord, kFrameHeaderBytes + sizeof(OfferBody));
  if (!body) return false;
  int slot = free_slots_.back();
  free_slots_.pop_back();
  uint32_t generation = ++generations_[slot] & kLargestOfferGeneration;
  mailbox_.header().offers[slot].store(offer_word(generation, OfferState::kPending),
                                       std::memory_order_release);
  encode(header, body);
  OfferBody offer{reinterpret_cast<uint64_t>(request.data), static_cast<uint32_t>(slot),
                  generation};
  std::memcpy(body + kFrameHeaderBytes, &offer, sizeof offer);
  out.ring.commit();
  offers_.push_back(Offer{owner, peer, slot, generation});
  unfinished_sends_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool ShmPath::complete_offers(bool wait_for_lock) {
  std::vector<RequestPtr> done;
  {
    if (wait_for_lock) {
      offers_mutex_.lock();
    } else if (!offers_mutex_.try_lock()) {
      return false;
    }
    util::MutexLock lock(offers_mutex_, std::adopt_lock);
    if (offers_.empty()) return false;
    for (auto it = offers_.begin(); it != offers_.end();) {
      uint64_t word = mailbox_.header().offers[it->slot].load(std::memory_order_acquire);
      if (word != offer_word(it->generation, OfferState::kDone)) {
        ++it;
        continue;
      }
      mailbox_.header().offers[it->slot].store(offer_word(it->generation, OfferState::kFree),
                                               std::memory_order_relaxed);
      free_slots_.push_back(it->slot);
      done.push_back(std::move(it->request));
      it = offers_.erase(it);
      unfinished_sends_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  for (const RequestPtr& request : done) request->complete();
  return !done.empty();
}

bool ShmPath::cancel_send(Request& request, const std::shared_ptr<const Error>& reason) {
  if (request.done() || !reaches(request.peer)) return false;
  Outbound& out = *outbound_[request.peer];
  {
    util::MutexLock lock(out.mutex);
    for (auto it = out.queue.begin(); it != out.queue.end(); ++it) {
      if (it->request.get() != &request) continue;
      if (!it->started) {
        out.queue.erase(it);
        unfinished_sends_.fetch_sub(1, std::memory_order_relaxed);
      } else {
        // Half written: the rest must still go, from our own copy.
        auto* data = static_cast<const uint8_t*>(request.data);
        it->owned.assign(data, data + request.bytes);
        it->request.reset();
      }
      request.fail(reason);
      return true;
    }
  }
  util::MutexLock lock(offers_mutex_);
  for (auto it = offers_.begin(); it != offers_.end(); ++it) {
    if (it->request.get() != &request) continue;
    uint64_t expected = offer_word(it->generation, OfferState::kPending);
    // The receiver has not started reading: withdraw the offer, the buffer is ours again.
    if (!mailbox_.header().offers[it->slot].compare_exchange_strong(
            expected, offer_word(it->generation, OfferState::kFree))) {
      return false;  // being read, or read: it completes in a moment
    }
    free_slots_.push_back(it->slot);
    offers_.erase(it);
    unfinished_sends_.fetch_sub(1, std::memory_order_relaxed);
    request.fail(reason);
    return true;
  }
  return false;
}

// ------------------------------------------------------------------------------------------
// Receiving
// ------------------------------------------------------------------------------------------

bool ShmPath::drain_locked(int peer, Inbound& in) {
  if (in.broken.load(std::memory_order_relaxed)) return false;
  bool moved = false;
  ShmRing::Record record;
  while (in.ring.front(&record)) {
    if (!handle_record(peer, in, record)) {
      in.broken.store(true, std::memory_order_release);
      return moved;
    }
    in.ring.pop();
    moved = true;
  }
  // A peer that writes to us is one whose departure matters.
  if (moved && !watched_[peer].load(std::memory_order_relaxed)) {
    watched_[peer].store(true, std::memory_order_relaxed);
  }
  if (in.ring.fault()) {
    in.broken_because =
        "wrote positions or lengths no weft rank writes into its shared-memory "
        "ring: " +
        in.ring.fault().to_string();
    in.broken.store(true, std::memory_order_release);
    return moved;
  }
  if (moved) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    RingControl& control = in.ring.control();
    if (control.producer_waiting.load(std::memory_order_seq_cst) &&
        control.producer_waiting.exchange(0) &&
        outbound_[peer]->reachable.load(std::memory_order_acquire)) {
      outbound_[peer]->mailbox.wake();
    }
  }
  return moved;
}

bool ShmPath::handle_record(int peer, Inbound& in, const ShmRing::Record& record) {
  // The rest of a message whose start was dropped with a failure: nothing to put it in.
  if (record.kind == kNextChunkRecord && !in.in_chunks) return true;
  ShmRecordLimits limits;
  limits.sender = static_cast<uint32_t>(peer);
  limits.offer_slots = kOfferSlots;
  limits.chunk_room = in.in_chunks ? in.assembling.bytes - in.assembled_bytes : 0;
  ShmRecord decoded = decode_shm_record(record.kind, record.body, record.bytes, limits);
  if (decoded.fault) {
    in.broken_because = "wrote a record no weft rank writes into its shared-memory ring: " +
                        decoded.fault.to_string();
    return false;
  }
  try {
    switch (record.kind) {
      case kInlineRecord:
        deliver_copy(decoded.header, decoded.payload);
        return true;
      case kOfferRecord:
        if (!outbound_[peer]->reachable.load(std::memory_order_acquire)) {
          in.broken_because =
              "offered a message for a single-copy read, though this rank has not "
              "mapped its mailbox (nor told it it could read its memory)";
          return false;
        }
        take_offer(peer, decoded.header, decoded.offer);
        return true;
      case kNewsRecord: {
        ReadNews news{
            peer, decoded.header,
            std::string(reinterpret_cast<const char*>(decoded.payload), decoded.payload_bytes)};
        if (news.header.kind == FrameKind::kPeerFailed && !in.first_death_told) {
          in.first_death_told = news;
        }
        util::MutexLock lock(news_mutex_);
        news_.push_back(std::move(news));
        has_news_.store(true, std::memory_order_release);
        return true;
      }
      case kFirstChunkRecord:
        in.assembling = decoded.header;
        in.assembled = pool_.take(in.assembling.bytes, in.assembled_capacity);
        in.assembled_bytes = 0;
        in.in_chunks = true;
        break;
      default:  // kNextChunkRecord
        break;
    }
  } catch (const std::bad_alloc&) {
    in.broken_because = "announced a message of " + std::to_string(decoded.header.bytes) +
                        " bytes, and this rank could not allocate a buffer that large";
    return false;
  }
  std::memcpy(in.assembled.get() + in.assembled_bytes, decoded.payload, decoded.payload_bytes);
  in.assembled_bytes += decoded.payload_bytes;
  if (in.assembled_bytes == in.assembling.bytes) {
    in.in_chunks = false;
    deliver_copy(in.assembling, in.assembled.get());
    pool_.give_back(std::move(in.assembled), in.assembled_capacity);
  }
  return true;
}

void ShmPath::deliver_copy(const FrameHeader& header, const uint8_t* payload) {
  events_.deliver(header, [&](void* destination) -> std::shared_ptr<const Error> {
    std::memcpy(destination, payload, header.bytes);
    return nullptr;
  });
}

void ShmPath::take_offer(int peer, const FrameHeader& header, const OfferBody& offer) {
  Outbound& theirs = *outbound_[peer];
  std::atomic<uint64_t>& word = theirs.mailbox.header().offers[offer.slot];
  bool taken = false;
  events_.deliver(header, [&](void* destination) -> std::shared_ptr<const Error> {
    uint64_t expected = offer_word(offer.generation, OfferState::kPending);
    if (!word.compare_exchange_strong(expected,
                                      offer_word(offer.generation, OfferState::kPulling))) {
      taken = true;
      return peer_error(peer, ErrorCode::kAborted,
                        "rank " + std::to_string(peer) +
                            " withdrew its message before it was read (its send gave up)");
    }
    taken = true;
    int error =
        read_process_memory(theirs.mailbox.owner_pid(), offer.address, destination, header.bytes);
    word.store(offer_word(offer.generation, OfferState::kDone), std::memory_order_release);
    if (error == 0) return nullptr;
    return peer_error(peer, ErrorCode::kPeerFailure,
                      "could not read the message of rank " + std::to_string(peer) + " (" +
                          std::to_string(header.bytes) +
                          " bytes) from its memory: process_vm_readv: " + std::strerror(error));
  });
  if (!taken) {
    // Dropped (its receive expected something else): the sender may go on all the same.
    uint64_t expected = offer_word(offer.generation, OfferState::kPending);
    word.compare_exchange_strong(expected, offer_word(offer.generation, OfferState::kDone));
  }
  theirs.mailbox.notify();
}

void ShmPath::fail_broken_ring_from(int peer) {
  Inbound& in = *inbound_[peer];
  if (!in.broken.load(std::memory_order_acquire) || in.reported.exchange(true)) return;
  fail_broken_peer(peer, in.broken_because);
}

void ShmPath::fail_broken_ring_for(int peer) {
  Outbound& out = *outbound_[peer];
  std::string what;
  {
    util::MutexLock lock(out.mutex);
    if (out.reported_broken || !out.ring.fault()) return;
    out.reported_broken = true;
    what = "broke the shared-memory ring this rank writes its messages into: " +
           out.ring.fault().to_string();
  }
  fail_broken_peer(peer, what);
}

// ------------------------------------------------------------------------------------------
// News and departures
// ------------------------------------------------------------------------------------------

void ShmPath::announce_death(int peer, const std::string& text) {
  FrameHeader header;
  header.kind = FrameKind::kPeerFailed;
  header.tag = static_cast<uint64_t>(peer);
  announce(peer, header, text);
}

void ShmPath::announce_abort(uint64_t context, const std::string& text) {
  FrameHeader header;
  header.kind = FrameKind::kContextAbort;
  header.context = context;
  announce(-1, header, text);
}

void ShmPath::announce(int skipped_peer, const FrameHeader& header, const std::string& text) {
  const std::size_t bytes = std::min(text.size(), kNewsTextBytes);
  for (int peer : local_peers_) {
    Outbound& out = *outbound_[peer];
    if (peer == skipped_peer || !out.reachable.load(std::memory_order_acquire)) continue;
    PendingSend send;
    send.news = header;
    send.news->source = static_cast<uint32_t>(options_.rank);
    send.news->bytes = bytes;
    send.owned.assign(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bytes));
    util::MutexLock lock(out.mutex);
    if (out.failure || stopping_.load()) continue;
    out.queue.push_back(std::move(send));
    unfinished_sends_.fetch_add(1, std::memory_order_relaxed);
    flush_locked(peer, out);
  }
}

void ShmPath::report_news() {
  std::vector<ReadNews> news;
  {
    util::MutexLock lock(news_mutex_);
    news.swap(news_);
    has_news_.store(false, std::memory_order_relaxed);
  }
  for (const ReadNews& item : news) {
    if (item.header.kind == FrameKind::kContextAbort) {
      events_.context_aborted(item.header.context,
                              std::make_shared<const Error>(ErrorCode::kAborted, reported(item)));
      continue;
    }
    if (std::shared_ptr<const Error> death = death_told(item)) {
      const int dead = death->context().peer;
      events_.peer_lost(dead, std::move(death), /*died=*/true);
    }
  }
}

std::string ShmPath::reported(const ReadNews& news) {
  return news.text + " (reported by rank " + std::to_string(news.from) + ")";
}

std::shared_ptr<const Error> ShmPath::death_told(const ReadNews& news) const {
  const uint64_t failed = news.header.tag;
  if (failed >= static_cast<uint64_t>(options_.world_size) ||
      failed == static_cast<uint64_t>(options_.rank)) {
    return nullptr;
  }
  return peer_error(static_cast<int>(failed), ErrorCode::kPeerFailure, reported(news));
}

void ShmPath::keep_gone_peer(int peer, pid_t pid, const std::string& why_unmapped) {
  Outbound& out = *outbound_[peer];
  {
    util::MutexLock lock(out.mutex);
    out.failure =
        peer_error(peer, ErrorCode::kPeerFailure,
                   "rank " + std::to_string(peer) + " (pid " + std::to_string(pid) +
                       ", this host) was gone before rank " + std::to_string(options_.rank) +
                       " could map its shared memory (" + why_unmapped + ")");
  }
  processes_[peer] = ProcessWatch(pid);
  watched_[peer].store(true, std::memory_order_relaxed);
  out.gone_before_reached.store(true, std::memory_order_release);
}

bool ShmPath::gone(int peer, pid_t pid) const {
  return inbound_[peer]->ring.control().sender_left.load(std::memory_order_acquire) ||
         ProcessWatch(pid).exited();
}

void ShmPath::check_departures() {
  const auto now = std::chrono::steady_clock::now();
  const bool look_at_processes = now - last_departure_check_ >= kDepartureCheck;
  if (look_at_processes) last_departure_check_ = now;
  std::vector<std::pair<int, bool>> departures;  // peer, died
  for (int peer : local_peers_) {
    if (departed_[peer] || !watched_[peer].load(std::memory_order_relaxed)) continue;
    const RingControl& ours = inbound_[peer]->ring.control();
    if (ours.sender_left.load(std::memory_order_acquire)) {
      departures.emplace_back(peer, false);
    } else if (look_at_processes && processes_[peer].exited()) {
      // It may have said goodbye just before it exited.
      departures.emplace_back(peer, !ours.sender_left.load(std::memory_order_acquire));
    }
  }
  if (departures.empty()) return;
  // What the others wrote first goes first: a peer often leaves because of news (an abort, a
  // death) that reached us too, and our waiters must fail with that cause, not with its leaving.
  for (int peer : local_peers_) drain_from(peer);
  if (has_news_.load(std::memory_order_acquire)) report_news();
  for (const auto& [peer, died] : departures) report_departure(peer, died);
}

void ShmPath::report_departure(int peer, bool died) {
  departed_[peer] = 1;
  const std::string who = "rank " + std::to_string(peer) + " (pid " +
                          std::to_string(processes_[peer].pid()) + ", this host)";
  std::shared_ptr<const Error> error =
      died
          ? peer_error(peer, ErrorCode::kPeerFailure,
                       who + " exited without shutting down: the process died or was killed")
          : std::make_shared<const Error>(
                ErrorCode::kPeerFailure, who + " has shut down; operations with it cannot complete",
                ErrorContext{.peer = peer}, cause_of_leaving(peer));
  if (died) util::log_error(util::Subsys::kShm, [&] { return error->what(); });
  events_.peer_lost(peer, error, died);
}

std::shared_ptr<const Error> ShmPath::cause_of_leaving(int peer) {
  // A rank usually shuts down early because another died: the death it told us of is the
  // likeliest cause, else the first we saw. Not what the Router knows by now: the thread that
  // read the peer's news may still be reporting it.
  {
    Inbound& in = *inbound_[peer];
    util::MutexLock lock(in.mutex);
    if (in.first_death_told) {
      if (std::shared_ptr<const Error> told = death_told(*in.first_death_told)) return told;
    }
  }
  return events_.first_death();
}

void ShmPath::fail_broken_peer(int peer, const std::string& what) {
  std::string message = "rank " + std::to_string(peer) + " " + what + "; rank " +
                        std::to_string(options_.rank) + " no longer reads it";
  util::log_error(util::Subsys::kShm, [&] { return message; });
  events_.peer_lost(peer, peer_error(peer, ErrorCode::kPeerFailure, message), /*died=*/true);
}

// ------------------------------------------------------------------------------------------
// Progress
// ------------------------------------------------------------------------------------------

bool ShmPath::progress() {
  bool moved = false;
  bool sending = unfinished_sends_.load(std::memory_order_relaxed) > 0;
  for (int peer : local_peers_) {
    Inbound& in = *inbound_[peer];
    if (!in.ring.empty()) {
      if (in.mutex.try_lock()) {
        util::MutexLock lock(in.mutex, std::adopt_lock);
        moved |= drain_locked(peer, in);
      }
      if (in.broken.load(std::memory_order_relaxed)) fail_broken_ring_from(peer);
    }
    Outbound& out = *outbound_[peer];
    if (sending && out.reachable.load(std::memory_order_relaxed)) {
      bool broken = false;
      if (out.mutex.try_lock()) {
        util::MutexLock lock(out.mutex, std::adopt_lock);
        if (!out.queue.empty()) moved |= flush_locked(peer, out);
        broken = static_cast<bool>(out.ring.fault());
      }
      if (broken) fail_broken_ring_for(peer);
    }
  }
  if (sending) moved |= complete_offers(/*wait_for_lock=*/false);
  if (has_news_.load(std::memory_order_acquire)) report_news();
  return moved;
}

bool ShmPath::poll(Request* waited_for) {
  (void)waited_for;
  // What moved here is shared memory's: a waiter spins on it anyway (completed_by_polling).
  progress();
  return false;
}

bool ShmPath::completed_by_polling(const Request& request) const {
  return request.peer == kAnyPeer ? has_local_peers() : reaches(request.peer);
}

void ShmPath::start_polling(const Request* waited_for) {
  (void)waited_for;
  mailbox_.header().pollers.fetch_add(1, std::memory_order_seq_cst);
}

void ShmPath::stop_polling(const Request* waited_for) {
  (void)waited_for;
  mailbox_.header().pollers.fetch_sub(1, std::memory_order_seq_cst);
  // A sender that saw us polling did not wake anyone: look once more before going to sleep.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  progress();
}

void ShmPath::run_progress() {
  MailboxHeader& header = mailbox_.header();
  while (!stopping_.load()) {
    check_departures();
    if (progress()) continue;
    uint32_t seen = header.doorbell.load(std::memory_order_seq_cst);
    header.sleeping.store(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!progress() && !stopping_.load()) {
      util::futex_wait_shared(header.doorbell, seen,
                              std::chrono::steady_clock::now() + kProgressTick);
    }
    header.sleeping.store(0, std::memory_order_relaxed);
  }
}

// ------------------------------------------------------------------------------------------
// Failure and shutdown
// ------------------------------------------------------------------------------------------

void ShmPath::drain_from(int peer) {
  // Not only known neighbours: a peer may have written to us before we learnt it is one.
  if (peer < 0 || peer >= options_.world_size || peer == options_.rank) return;
  Inbound& in = *inbound_[peer];
  util::MutexLock lock(in.mutex);
  drain_locked(peer, in);
}

void ShmPath::drop_peer(int peer, const std::shared_ptr<const Error>& error,
                        std::vector<RequestPtr>& victims) {
  if (peer < 0 || peer >= options_.world_size) return;
  // A peer that read our offers and left at once: those sends succeeded.
  complete_offers(/*wait_for_lock=*/true);
  {
    Outbound& out = *outbound_[peer];
    util::MutexLock lock(out.mutex);
    if (!out.failure) out.failure = error;
    for (PendingSend& send : out.queue) {
      if (send.request) victims.push_back(std::move(send.request));
    }
    unfinished_sends_.fetch_sub(static_cast<int>(out.queue.size()), std::memory_order_relaxed);
    out.queue.clear();
  }
  {
    util::MutexLock lock(offers_mutex_);
    for (auto it = offers_.begin(); it != offers_.end();) {
      if (it->peer != peer) {
        ++it;
        continue;
      }
      // The reader is gone: the slot stays out of use (a late read would still find it).
      victims.push_back(std::move(it->request));
      it = offers_.erase(it);
      unfinished_sends_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  {
    Inbound& in = *inbound_[peer];
    util::MutexLock lock(in.mutex);
    in.in_chunks = false;
    if (in.assembled) pool_.give_back(std::move(in.assembled), in.assembled_capacity);
  }
}

void ShmPath::shutdown(std::chrono::steady_clock::time_point flush_deadline) {
  if (stopping_.exchange(true)) return;
  auto idle = [this] {
    for (int peer : local_peers_) {
      Outbound& out = *outbound_[peer];
      util::MutexLock lock(out.mutex);
      if (!out.queue.empty()) return false;
    }
    util::MutexLock lock(offers_mutex_);
    return offers_.empty();
  };
  while (!idle() && std::chrono::steady_clock::now() < flush_deadline) {
    if (!progress()) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  // Goodbye: after our last record in each ring, so that a peer that reads it has them all.
  for (int peer : local_peers_) {
    Outbound& out = *outbound_[peer];
    if (!out.reachable.load(std::memory_order_acquire)) continue;
    {
      util::MutexLock lock(out.mutex);
      out.ring.control().sender_left.store(1, std::memory_order_release);
    }
    out.mailbox.wake();
  }
  mailbox_.wake();
  if (progress_thread_.joinable()) progress_thread_.join();
  auto aborted = std::make_shared<const Error>(ErrorCode::kAborted, "the transport was shut down");
  std::vector<RequestPtr> unsent;
  for (int peer : local_peers_) drop_peer(peer, aborted, unsent);
  for (const RequestPtr& request : unsent) request->fail(aborted);
}

}  // namespace weft::transport
