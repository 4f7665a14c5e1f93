#include "transport/ofi/ofi_path.h"

#include <rdma/fi_errno.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstring>

#include "transport/ofi/ofi_wire.h"
#include "util/log.h"

namespace weft::transport {

// What a completion's context points at: its first member is libfabric's scratch space.
struct OfiPath::Operation {
  enum class Kind : uint8_t { kSendChunk, kReceive };
  explicit Operation(Kind kind) : kind(kind) {}
  struct fi_context2 context {};
  const Kind kind;
};

// One message being sent: its chunks are posted in order; it completes when the last chunk's
// completion is read. `outstanding` counts chunks posted and not completed, plus one held by
// the poster until every chunk is posted, so that exactly one side finishes the request.
struct OfiPath::SendJob {
  RequestPtr request;
  FrameHeader header;
  uint64_t next_offset = 0;
  bool first_posted = false;
  std::atomic<int> outstanding{1};
  util::Mutex error_mutex;
  std::shared_ptr<const Error> error WEFT_GUARDED_BY(error_mutex);

  void record(std::shared_ptr<const Error> failure) {
    util::MutexLock lock(error_mutex);
    if (!error) error = std::move(failure);
  }
  // The last reference of `outstanding` is gone: the request completes or fails.
  void finish() {
    std::shared_ptr<const Error> failure;
    {
      util::MutexLock lock(error_mutex);
      failure = error;
    }
    if (failure)
      request->fail(failure);
    else
      request->complete();
  }
  void release() {
    if (outstanding.fetch_sub(1, std::memory_order_acq_rel) == 1) finish();
  }
};

// A chunk in flight: its prefix (chunk header, frame header) lives here until its completion.
struct OfiPath::SentChunk : Operation {
  SentChunk() : Operation(Kind::kSendChunk) {}
  std::shared_ptr<SendJob> job;
  OfiChunkHeader chunk;
  uint8_t frame[kFrameHeaderBytes];
};

struct OfiPath::ReceiveSlot : Operation {
  ReceiveSlot() : Operation(Kind::kReceive), buffer(kOfiFirstPrefixBytes + kChunkBytes) {}
  std::vector<uint8_t> buffer;
};

// A message of several chunks from one sender, being gathered.
struct OfiPath::Gathering {
  FrameHeader header;
  std::unique_ptr<uint8_t[]> payload;
  uint64_t got = 0;
};

OfiPath::OfiPath(const OfiPathOptions& options, PathEvents& events)
    : options_(options),
      events_(events),
      endpoint_(std::make_unique<OfiEndpoint>(options.endpoint)),
      provider_(endpoint_->provider()) {
  reached_.assign(options.world_size, false);
  {
    util::MutexLock lock(address_mutex_);
    known_.resize(options.world_size);
    addresses_.resize(options.world_size);
  }
  {
    util::MutexLock lock(send_mutex_);
    queues_.resize(options.world_size);
    next_sequence_.assign(options.world_size, 0);
  }
  gathering_.resize(options.world_size);
  expected_sequence_.assign(options.world_size, 0);
  early_chunks_.resize(options.world_size);
  for (int i = 0; i < kSlots; ++i) {
    slots_.push_back(std::make_unique<ReceiveSlot>());
    ReceiveSlot& slot = *slots_.back();
    ssize_t code =
        endpoint_->receive(slot.buffer.data(), slot.buffer.size(), static_cast<Operation*>(&slot));
    if (code != 0) {
      throw Error(ErrorCode::kSystem,
                  "ofi: cannot post a receive buffer: " + OfiEndpoint::error_text(code));
    }
  }
  progress_thread_ = std::thread([this] { progress_loop(); });
}

OfiPath::~OfiPath() { shutdown(std::chrono::steady_clock::now()); }

void OfiPath::set_peers(std::vector<bool> reached,
                        std::vector<std::optional<std::vector<uint8_t>>> known,
                        AddressLookup lookup) {
  reached_ = std::move(reached);
  lookup_ = std::move(lookup);
  util::MutexLock lock(address_mutex_);
  known_ = std::move(known);
}

bool OfiPath::reaches(int peer) const {
  return peer >= 0 && peer < options_.world_size && peer != options_.rank && reached_[peer];
}

std::shared_ptr<const Error> OfiPath::peer_error(int peer, const std::string& what) const {
  return std::make_shared<const Error>(
      ErrorCode::kPeerFailure,
      "rank " + std::to_string(peer) + " (over ofi, " + provider_ + "): " + what,
      ErrorContext{.rank = options_.rank, .peer = peer});
}

fi_addr_t OfiPath::address_of(int peer) {
  std::optional<std::vector<uint8_t>> name;
  {
    util::MutexLock lock(address_mutex_);
    if (addresses_[peer]) return *addresses_[peer];
    name = known_[peer];
  }
  if (!name && lookup_) name = lookup_(peer);
  if (!name || name->empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                "rank " + std::to_string(peer) +
                    " published no ofi address (it opened no ofi path: set WEFT_TRANSPORT=ofi "
                    "on every rank)",
                ErrorContext{.rank = options_.rank, .peer = peer});
  }
  util::MutexLock lock(address_mutex_);
  if (!endpoint_) throw Error(ErrorCode::kAborted, "the ofi path is shut down");
  if (!addresses_[peer]) addresses_[peer] = endpoint_->insert_address(*name);
  return *addresses_[peer];
}

// ------------------------------------------------------------------------------------------
// Sending
// ------------------------------------------------------------------------------------------

void OfiPath::post_send(const RequestPtr& request) {
  try {
    address_of(request->peer);
  } catch (const Error& e) {
    request->fail(std::make_shared<const Error>(e));
    return;
  }
  auto job = std::make_shared<SendJob>();
  job->request = request;
  job->header = data_header(*request, options_.rank);
  bool refused = false;
  {
    util::MutexLock lock(send_mutex_);
    if (closed_) {
      refused = true;
    } else {
      queues_[request->peer].push_back(job);
      queued_jobs_.fetch_add(1, std::memory_order_relaxed);
      post_queued();
    }
  }
  if (refused) {
    request->fail(std::make_shared<const Error>(ErrorCode::kAborted, "the ofi path is shut down"));
  }
}

bool OfiPath::post_queued() {
  bool posted = false;
  for (int peer = 0; peer < options_.world_size; ++peer) {
    std::deque<std::shared_ptr<SendJob>>& queue = queues_[peer];
    while (!queue.empty()) {
      std::shared_ptr<SendJob> job = queue.front();
      const uint64_t before = job->next_offset;
      const bool was_started = job->first_posted;
      const bool done = post_chunks(job);
      posted |= job->next_offset != before || job->first_posted != was_started;
      if (!done) break;
      queue.pop_front();
      queued_jobs_.fetch_sub(1, std::memory_order_relaxed);
      job->release();  // the poster's share: every chunk is posted
    }
  }
  return posted;
}

bool OfiPath::post_chunks(const std::shared_ptr<SendJob>& job) {
  const fi_addr_t to = [&] {
    util::MutexLock lock(address_mutex_);
    return *addresses_[job->request->peer];
  }();
  const uint64_t total = job->header.bytes;
  while (!job->first_posted || job->next_offset < total) {
    auto chunk = std::make_unique<SentChunk>();
    const uint64_t length = std::min<uint64_t>(kChunkBytes, total - job->next_offset);
    chunk->chunk.source = static_cast<uint32_t>(options_.rank);
    chunk->chunk.sequence = next_sequence_[job->request->peer];
    chunk->chunk.bytes = static_cast<uint32_t>(length);
    chunk->chunk.flags = (job->first_posted ? 0 : kFirstChunk) |
                         (job->next_offset + length == total ? kLastChunk : 0);
    struct iovec iov[3];
    std::size_t count = 0;
    iov[count++] = {&chunk->chunk, sizeof chunk->chunk};
    if (!job->first_posted) {
      encode(job->header, chunk->frame);
      iov[count++] = {chunk->frame, kFrameHeaderBytes};
    }
    if (length > 0) {
      iov[count++] = {static_cast<uint8_t*>(job->request->data) + job->next_offset, length};
    }
    chunk->job = job;
    job->outstanding.fetch_add(1, std::memory_order_acq_rel);
    chunks_in_flight_.insert(chunk.get());
    ssize_t code = endpoint_->send(iov, count, to, static_cast<Operation*>(chunk.get()));
    if (code != 0) {
      chunks_in_flight_.erase(chunk.get());
      job->outstanding.fetch_sub(1, std::memory_order_acq_rel);
      if (code == -FI_EAGAIN) return false;
      job->record(peer_error(job->request->peer,
                             "a send could not be posted: " + OfiEndpoint::error_text(code)));
      return true;  // the rest is not sent
    }
    chunk.release();  // handle_send_done deletes it
    ++next_sequence_[job->request->peer];
    job->first_posted = true;
    job->next_offset += length;
  }
  return true;
}

bool OfiPath::cancel_send(Request& request, const std::shared_ptr<const Error>& reason) {
  RequestPtr cancelled;
  {
    util::MutexLock lock(send_mutex_);
    if (request.peer < 0 || request.peer >= options_.world_size) return false;
    std::deque<std::shared_ptr<SendJob>>& queue = queues_[request.peer];
    auto job = std::find_if(queue.begin(), queue.end(),
                            [&](const auto& queued) { return queued->request.get() == &request; });
    if (job == queue.end() || (*job)->first_posted) return false;  // on its way already
    cancelled = (*job)->request;
    queue.erase(job);
    queued_jobs_.fetch_sub(1, std::memory_order_relaxed);
  }
  cancelled->fail(reason);
  return true;
}

void OfiPath::handle_send_done(SentChunk* chunk, std::shared_ptr<const Error> error) {
  {
    util::MutexLock lock(send_mutex_);
    chunks_in_flight_.erase(chunk);
  }
  std::unique_ptr<SentChunk> owned(chunk);
  std::shared_ptr<SendJob> job = std::move(owned->job);
  if (error) job->record(error);
  job->release();
  if (error) events_.peer_lost(job->request->peer, error, /*died=*/true);
}

// ------------------------------------------------------------------------------------------
// Progress
// ------------------------------------------------------------------------------------------

bool OfiPath::poll(Request* waited_for) {
  if (!try_claim()) return false;
  bool moved = progress_claimed(0);
  release_claim();
  return moved;
}

bool OfiPath::progress_claimed(int timeout_ms) {
  if (!endpoint_) return false;  // shut down (under the claim, as here)
  bool moved = false;
  if (queued_jobs_.load(std::memory_order_relaxed) > 0) {
    util::MutexLock lock(send_mutex_);
    moved |= post_queued();
  }
  std::vector<ReceiveSlot*> reposts;
  reposts.swap(slots_to_repost_);
  for (ReceiveSlot* slot : reposts) repost(*slot);
  struct fi_cq_msg_entry entries[16];
  for (int round = 0; round < 4; ++round) {
    ssize_t read = endpoint_->read_completions(entries, 16, round == 0 ? timeout_ms : 0);
    if (read == -FI_EAVAIL) {
      struct fi_cq_err_entry failure;
      std::string text;
      if (!endpoint_->read_error(&failure, &text)) break;
      moved = true;
      auto* operation = static_cast<Operation*>(failure.op_context);
      if (operation->kind == Operation::Kind::kSendChunk) {
        auto* chunk = static_cast<SentChunk*>(operation);
        handle_send_done(chunk, peer_error(chunk->job->request->peer, "a send failed: " + text));
      } else if (!shut_down_.load() && failure.err != FI_ECANCELED) {
        util::log_warn(util::Subsys::kTransport,
                       [&] { return "ofi: a receive failed: " + text + "; reposted"; });
        repost(*static_cast<ReceiveSlot*>(operation));
      }
      continue;
    }
    if (read <= 0) break;
    moved = true;
    for (ssize_t i = 0; i < read; ++i) {
      auto* operation = static_cast<Operation*>(entries[i].op_context);
      if (operation->kind == Operation::Kind::kSendChunk) {
        handle_send_done(static_cast<SentChunk*>(operation), nullptr);
      } else {
        handle_completed_receive(*static_cast<ReceiveSlot*>(operation), entries[i].len);
      }
    }
    if (read < 16) break;
  }
  return moved;
}

void OfiPath::repost(ReceiveSlot& slot) {
  if (shut_down_.load(std::memory_order_acquire)) return;
  ssize_t code =
      endpoint_->receive(slot.buffer.data(), slot.buffer.size(), static_cast<Operation*>(&slot));
  if (code == -FI_EAGAIN) {
    slots_to_repost_.push_back(&slot);  // after the next read of the queue
  } else if (code != 0) {
    util::log_warn(util::Subsys::kTransport, [&] {
      return "ofi: a receive buffer could not be posted again: " + OfiEndpoint::error_text(code);
    });
  }
}

void OfiPath::handle_completed_receive(ReceiveSlot& slot, std::size_t length) {
  OfiChunkHeader chunk;
  if (length >= sizeof chunk) std::memcpy(&chunk, slot.buffer.data(), sizeof chunk);
  if (length < sizeof chunk || chunk.magic != kOfiChunkMagic ||
      chunk.source >= static_cast<uint32_t>(options_.world_size)) {
    handle_arrival(slot.buffer.data(), length);  // dropped there, saying why
    repost(slot);
    return;
  }
  const int sender = static_cast<int>(chunk.source);
  if (chunk.sequence != expected_sequence_[sender]) {
    early_chunks_[sender].emplace(chunk.sequence, std::make_pair(&slot, length));
    return;
  }
  handle_arrival(slot.buffer.data(), length);
  repost(slot);
  ++expected_sequence_[sender];
  auto& early = early_chunks_[sender];
  for (auto next = early.find(expected_sequence_[sender]); next != early.end();
       next = early.find(expected_sequence_[sender])) {
    auto [held, held_length] = next->second;
    early.erase(next);
    handle_arrival(held->buffer.data(), held_length);
    repost(*held);
    ++expected_sequence_[sender];
  }
}

void OfiPath::handle_arrival(const uint8_t* bytes, std::size_t length) {
  OfiChunkHeader chunk;
  auto dropped = [&](const std::string& why) {
    util::log_warn(util::Subsys::kTransport, [&] {
      return "rank " + std::to_string(options_.rank) + ": ofi: dropped a message that is not " +
             "a weft rank's (" + why + ")";
    });
  };
  if (length < sizeof chunk) return dropped("shorter than a chunk header");
  std::memcpy(&chunk, bytes, sizeof chunk);
  const std::size_t prefix = (chunk.flags & kFirstChunk) ? kOfiFirstPrefixBytes : sizeof chunk;
  if (chunk.magic != kOfiChunkMagic || chunk.source >= static_cast<uint32_t>(options_.world_size) ||
      length != prefix + chunk.bytes || chunk.bytes > kChunkBytes) {
    return dropped("a chunk of " + std::to_string(length) +
                   " bytes with a header that does not "
                   "fit it");
  }
  const int sender = static_cast<int>(chunk.source);
  const uint8_t* payload = bytes + prefix;
  std::unique_ptr<Gathering>& gathering = gathering_[sender];
  if (chunk.flags & kFirstChunk) {
    FrameHeader header;
    try {
      header = decode(bytes + sizeof chunk);
    } catch (const Error& e) {
      return dropped(e.message());
    }
    std::string problem = frame_header_problem(header, sender, FrameLimits{});
    if (!problem.empty() || header.kind != FrameKind::kData || gathering) {
      return dropped(problem.empty() ? "a first chunk out of turn" : problem);
    }
    if ((chunk.flags & kLastChunk) && header.bytes == chunk.bytes) {
      events_.deliver(header, [&](void* destination) -> std::shared_ptr<const Error> {
        std::memcpy(destination, payload, chunk.bytes);
        return nullptr;
      });
      return;
    }
    gathering = std::make_unique<Gathering>();
    gathering->header = header;
    try {
      gathering->payload.reset(new uint8_t[header.bytes]);
    } catch (const std::bad_alloc&) {
      gathering.reset();
      return dropped("no room for a message of " + std::to_string(header.bytes) + " bytes");
    }
  } else if (!gathering) {
    return dropped("a chunk of no message");
  }
  if (gathering->got + chunk.bytes > gathering->header.bytes) {
    gathering.reset();
    return dropped("chunks longer than their message");
  }
  std::memcpy(gathering->payload.get() + gathering->got, payload, chunk.bytes);
  gathering->got += chunk.bytes;
  if (!(chunk.flags & kLastChunk)) return;
  std::unique_ptr<Gathering> whole = std::move(gathering);
  if (whole->got != whole->header.bytes) return dropped("a message cut short");
  events_.deliver(whole->header, [&](void* destination) -> std::shared_ptr<const Error> {
    std::memcpy(destination, whole->payload.get(), whole->header.bytes);
    return nullptr;
  });
}

void OfiPath::start_polling(const Request* waited_for) {
  pollers_.fetch_add(1, std::memory_order_relaxed);
}

void OfiPath::stop_polling(const Request* waited_for) {
  pollers_.fetch_sub(1, std::memory_order_relaxed);
}

bool OfiPath::completed_by_polling(const Request& request) const {
  return request.peer != kAnyPeer && reaches(request.peer);
}

void OfiPath::progress_loop() {
  while (!stopping_.load(std::memory_order_acquire)) {
    if (pollers_.load(std::memory_order_relaxed) > 0 || !try_claim()) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    const bool can_wait = endpoint_->can_wait();
    const bool moved = progress_claimed(can_wait ? 2 : 0);
    release_claim();
    if (!moved && !can_wait) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// ------------------------------------------------------------------------------------------
// Failures, shutdown
// ------------------------------------------------------------------------------------------

void OfiPath::drain_from(int peer) {
  // What arrived is delivered, in order, by whoever holds the claim: wait for it (a thread
  // delivering right now finishes soon), then read the queue until it is empty. A thread of
  // ours that holds the claim itself (a failure reported while delivering) has read it.
  if (claim_holder_.load(std::memory_order_relaxed) == std::this_thread::get_id()) return;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  while (!try_claim()) {
    if (std::chrono::steady_clock::now() >= give_up) return;
    std::this_thread::yield();
  }
  while (progress_claimed(0)) {
  }
  release_claim();
}

void OfiPath::drop_peer(int peer, const std::shared_ptr<const Error>& why,
                        std::vector<RequestPtr>& victims) {
  util::MutexLock lock(send_mutex_);
  if (peer < 0 || peer >= options_.world_size) return;
  for (const std::shared_ptr<SendJob>& job : queues_[peer]) {
    job->record(why);
    victims.push_back(job->request);
  }
  queued_jobs_.fetch_sub(static_cast<int>(queues_[peer].size()), std::memory_order_relaxed);
  queues_[peer].clear();
  // Sends on their way to it will never be delivered: they fail now (their chunks are freed
  // when the endpoint reports them, or at shutdown).
  for (SentChunk* chunk : chunks_in_flight_) {
    if (chunk->job->request->peer != peer) continue;
    chunk->job->record(why);
    victims.push_back(chunk->job->request);
  }
}

void OfiPath::shutdown(std::chrono::steady_clock::time_point flush_deadline) {
  if (shut_down_.exchange(true)) return;
  while (queued_jobs_.load() > 0 && std::chrono::steady_clock::now() < flush_deadline) {
    if (try_claim()) {
      progress_claimed(0);
      release_claim();
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  // Sends posted already get until the deadline to complete.
  for (;;) {
    {
      util::MutexLock lock(send_mutex_);
      if (chunks_in_flight_.empty()) break;
    }
    if (std::chrono::steady_clock::now() >= flush_deadline) break;
    if (try_claim()) {
      progress_claimed(0);
      release_claim();
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  stopping_.store(true, std::memory_order_release);
  if (progress_thread_.joinable()) progress_thread_.join();
  // Closing the endpoint cancels what is posted; nothing reads its queue any more.
  while (!try_claim()) std::this_thread::yield();
  std::vector<RequestPtr> left;
  std::vector<std::unique_ptr<SentChunk>> abandoned;
  {
    util::MutexLock lock(send_mutex_);
    closed_ = true;
    {
      util::MutexLock addresses(address_mutex_);
      endpoint_.reset();
    }
    for (auto& queue : queues_) {
      for (const std::shared_ptr<SendJob>& job : queue) left.push_back(job->request);
      queue.clear();
    }
    queued_jobs_.store(0);
    for (SentChunk* chunk : chunks_in_flight_) {
      left.push_back(chunk->job->request);
      abandoned.emplace_back(chunk);
    }
    chunks_in_flight_.clear();
  }
  release_claim();
  auto aborted = std::make_shared<const Error>(ErrorCode::kAborted, "the ofi path was shut down");
  for (const RequestPtr& request : left) request->fail(aborted);
}

}  // namespace weft::transport
