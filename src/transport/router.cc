#include "transport/router.h"

#include <algorithm>
#include <cstring>
#include <list>
#include <thread>

#include "util/log.h"

namespace weft::transport {

namespace {

std::shared_ptr<const Error> make_error(ErrorCode code, const std::string& message) {
  return std::make_shared<const Error>(code, message);
}

}  // namespace

Router::Router(int rank, int world_size)
    : rank_(rank),
      world_size_(world_size),
      failed_(new std::atomic<bool>[world_size]()),
      watched_(new std::atomic<bool>[world_size]()),
      pool_(kHeldPerSender) {
  util::MutexLock lock(mutex_);
  failures_.resize(world_size);
  matcher_.expect_senders(world_size);
}

Router::~Router() { shutdown(std::chrono::steady_clock::now() + std::chrono::seconds(2)); }

void Router::add_path(std::unique_ptr<Path> path) {
  if (DepartureWatch* watch = path->departures()) departure_watches_.push_back(watch);
  if (StreamedReceiver* receiver = path->streamed_receiver()) {
    streamed_receivers_.push_back(receiver);
  }
  paths_.push_back(std::move(path));
}

Path* Router::path_to(int peer) const {
  for (const std::unique_ptr<Path>& path : paths_) {
    if (path->reaches(peer)) return path.get();
  }
  return nullptr;
}

void Router::watch(int peer) {
  if (watched_[peer].load(std::memory_order_relaxed)) return;
  for (DepartureWatch* watch : departure_watches_) {
    if (watch->watch(peer)) {
      watched_[peer].store(true, std::memory_order_relaxed);
      return;
    }
  }
}

// ------------------------------------------------------------------------------------------
// Posting
// ------------------------------------------------------------------------------------------

std::shared_ptr<const Error> Router::refusal_of(const Request& request) {
  if (!refusing_.load(std::memory_order_acquire)) return nullptr;
  util::MutexLock lock(mutex_);
  if (request.peer != kAnyPeer && failed_[request.peer].load()) return failures_[request.peer];
  if (shutting_down_) return make_error(ErrorCode::kAborted, "the transport is shutting down");
  auto aborted = aborted_contexts_.find(request.context);
  return aborted == aborted_contexts_.end() ? nullptr : aborted->second;
}

void Router::post_send(const RequestPtr& request) {
  if (request->peer == rank_) {
    send_to_self(request);
    return;
  }
  if (auto error = refusal_of(*request)) {
    request->fail(error);
    return;
  }
  Path* path = path_to(request->peer);
  if (!path) {
    request->fail(make_error(
        ErrorCode::kInvalidArgument,
        "rank " + std::to_string(rank_) + " has no path to rank " + std::to_string(request->peer)));
    return;
  }
  if (!path->departures()) watch(request->peer);
  path->post_send(request);
}

void Router::send_to_self(const RequestPtr& request) {
  FrameHeader header = data_header(*request, rank_);
  deliver(header, [&](void* destination) -> std::shared_ptr<const Error> {
    std::memcpy(destination, request->data, header.bytes);
    return nullptr;
  });
  request->complete();
}

void Router::post_recv(const RequestPtr& request) {
  const int from = request->peer;
  // Watching the sender now means a dead one is noticed (refused, or reset) instead of waited
  // for.
  if (from != kAnyPeer && from != rank_) watch(from);
  util::UniqueLock lock(mutex_);
  if (shutting_down_) {
    lock.unlock();
    request->fail(make_error(ErrorCode::kAborted, "the transport is shutting down"));
    return;
  }
  if (auto aborted = aborted_contexts_.find(request->context); aborted != aborted_contexts_.end()) {
    auto error = aborted->second;
    lock.unlock();
    request->fail(error);
    return;
  }
  if (UnexpectedMessage* message = matcher_.find_unexpected(*request)) {
    const bool parked = message->parked;
    if (auto error = check_fit(*request, message->header)) {
      // The message is consumed by the receive it was matched with, as in MPI.
      if (message->complete)
        matcher_.erase_unexpected(message);
      else
        message->claimed_by = request;
      lock.unlock();
      request->fail(error);
      if (parked) wake_parked();
      return;
    }
    if (!message->complete) {
      message->claimed_by = request;
      lock.unlock();
      if (parked) wake_parked();
      return;
    }
    if (message->header.bytes)
      std::memcpy(request->data, message->buffer.get(), message->header.bytes);
    request->source = static_cast<int>(message->header.source);
    matcher_.erase_unexpected(message);
    lock.unlock();
    request->complete();
    return;
  }
  if (const UnexpectedMessage* conflict = matcher_.find_conflicting_unexpected(*request)) {
    auto error = check_fit(*request, conflict->header);
    lock.unlock();
    request->fail(error);
    return;
  }
  if (from != kAnyPeer && failed_[from].load()) {
    auto error = failures_[from];
    lock.unlock();
    request->fail(error);
    return;
  }
  matcher_.add_posted(request);
  // What this receive waits for may come behind a parked payload of the same sender.
  if (matcher_.want_parked_from(from)) {
    lock.unlock();
    wake_parked();
  }
}

bool Router::cancel(Request& request, std::shared_ptr<const Error> reason) {
  if (request.done()) return false;
  if (request.kind == Request::Kind::kSend) {
    if (request.peer == rank_) return false;
    Path* path = path_to(request.peer);
    return path && path->cancel_send(request, reason);
  }
  {
    util::MutexLock lock(mutex_);
    if (matcher_.erase_posted(&request) || matcher_.release_claim(&request)) {
      request.fail(reason);
      return true;
    }
  }
  for (StreamedReceiver* receiver : streamed_receivers_) {
    if (receiver->detach_receive(request, reason)) return true;
  }
  return false;
}

// ------------------------------------------------------------------------------------------
// Progress
// ------------------------------------------------------------------------------------------

bool Router::poll(Request& request) {
  Path* own = request.peer >= 0 && request.peer != rank_ ? path_to(request.peer) : nullptr;
  bool moved = false;
  for (const std::unique_ptr<Path>& path : paths_) {
    moved |= path->poll(path.get() == own ? &request : nullptr);
  }
  return moved;
}

void Router::start_polling(const Request& request) {
  Path* own = request.peer >= 0 && request.peer != rank_ ? path_to(request.peer) : nullptr;
  for (const std::unique_ptr<Path>& path : paths_) {
    path->start_polling(path.get() == own ? &request : nullptr);
  }
}

void Router::stop_polling(const Request& request) {
  Path* own = request.peer >= 0 && request.peer != rank_ ? path_to(request.peer) : nullptr;
  for (auto path = paths_.rbegin(); path != paths_.rend(); ++path) {
    (*path)->stop_polling(path->get() == own ? &request : nullptr);
  }
}

bool Router::completed_by_polling(const Request& request) const {
  return std::any_of(paths_.begin(), paths_.end(),
                     [&](const auto& path) { return path->completed_by_polling(request); });
}

bool Router::pollers_have_own_cores() const {
  return std::any_of(paths_.begin(), paths_.end(),
                     [](const auto& path) { return path->pollers_have_own_cores(); });
}

// ------------------------------------------------------------------------------------------
// Arrivals
// ------------------------------------------------------------------------------------------

void Router::deliver(const FrameHeader& header, const PayloadFill& fill) {
  RequestPtr receive;
  RequestPtr conflicting;
  std::shared_ptr<const Error> mismatch;
  std::shared_ptr<const Error> lost;
  {
    util::MutexLock lock(mutex_);
    receive = matcher_.take_posted(header);
    if (receive) {
      mismatch = check_fit(*receive, header);
    } else {
      if ((conflicting = matcher_.take_conflicting_posted(header))) {
        mismatch = check_fit(*conflicting, header);
      }
      UnexpectedMessage* message = matcher_.add_unexpected(header);
      if (header.bytes) lost = fill(message->buffer.get());
      if (lost) {
        matcher_.erase_unexpected(message);
      } else {
        message->complete = true;
      }
    }
  }
  if (lost) {
    util::log_warn(util::Subsys::kTransport, [&] {
      return "rank " + std::to_string(rank_) + " lost a message from rank " +
             std::to_string(header.source) + " that nobody waited for yet: " + lost->message();
    });
  }
  if (conflicting) conflicting->fail(mismatch);  // the message itself waits, unexpected
  if (!receive) return;
  if (mismatch) {
    receive->fail(mismatch);  // the message is dropped
    return;
  }
  if (header.bytes) {
    if (auto error = fill(receive->data)) {
      receive->fail(error);
      return;
    }
  }
  receive->source = static_cast<int>(header.source);
  receive->complete();
}

// ------------------------------------------------------------------------------------------
// Failures
// ------------------------------------------------------------------------------------------

void Router::peer_lost(int peer, std::shared_ptr<const Error> error, bool died) {
  if (peer < 0 || peer >= world_size_ || peer == rank_ || failed_[peer].load()) return;
  // What the peer sent by any path before it left is delivered before anything pending with it
  // is declared lost.
  for (const std::unique_ptr<Path>& path : paths_) path->drain_from(peer);
  std::vector<RequestPtr> victims;
  TransportListener listener;
  {
    util::MutexLock lock(mutex_);
    if (failed_[peer].load()) return;
    failures_[peer] = error;
    failed_[peer].store(true, std::memory_order_release);
    refusing_.store(true, std::memory_order_release);
    if (died) {
      if (!first_death_) first_death_ = error;
      deaths_.emplace_back(peer, error->message());
      ++announcements_in_flight_;
    }
    std::list<RequestPtr> posted = matcher_.take_posted_from(peer);
    posted.splice(posted.end(), matcher_.take_claims_from(peer));
    victims.assign(std::make_move_iterator(posted.begin()), std::make_move_iterator(posted.end()));
    listener = listener_;
  }
  for (const std::unique_ptr<Path>& path : paths_) path->drop_peer(peer, error, victims);
  if (died) {
    for (DepartureWatch* watch : departure_watches_) watch->announce_death(peer, error->message());
    util::MutexLock lock(mutex_);
    --announcements_in_flight_;
  }
  for (const RequestPtr& victim : victims) victim->fail(error);
  // Only a death concerns the listener: a peer that shut down cleanly (or refused us) fails
  // just the requests that name it.
  if (died && listener.on_peer_failed) listener.on_peer_failed(peer, error);
}

void Router::fail_context(uint64_t context, std::shared_ptr<const Error> error) {
  std::list<RequestPtr> victims;
  TransportListener listener;
  {
    util::MutexLock lock(mutex_);
    if (!aborted_contexts_.emplace(context, error).second) return;
    refusing_.store(true, std::memory_order_release);
    victims = matcher_.take_posted_of_context(context);
    listener = listener_;
  }
  for (const RequestPtr& victim : victims) victim->fail(error);
  if (listener.on_context_aborted) listener.on_context_aborted(context, error);
  for (DepartureWatch* watch : departure_watches_) watch->announce_abort(context, error->message());
}

void Router::abort_context(uint64_t context, std::shared_ptr<const Error> reason) {
  fail_context(context, std::move(reason));
}

void Router::set_listener(TransportListener listener) {
  util::MutexLock lock(mutex_);
  listener_ = std::move(listener);
}

PathEvents::News Router::news_for_new_peer() const {
  News news;
  util::MutexLock lock(mutex_);
  news.deaths = deaths_;
  for (const auto& [context, reason] : aborted_contexts_) {
    news.aborted_contexts.emplace_back(context, reason->message());
  }
  return news;
}

std::shared_ptr<const Error> Router::first_death() const {
  util::MutexLock lock(mutex_);
  return first_death_;
}

// ------------------------------------------------------------------------------------------
// Peers, shutdown
// ------------------------------------------------------------------------------------------

std::string Router::peer_address(int peer) const {
  for (const DepartureWatch* watch : departure_watches_) {
    std::string address = watch->peer_address(peer);
    if (!address.empty()) return address;
  }
  return {};
}

void Router::probe_peer(int peer) {
  if (peer == rank_) return;
  for (DepartureWatch* watch : departure_watches_) {
    if (watch->watch(peer)) return;
  }
}

void Router::log_paths() const {
  for (int peer = 0; peer < world_size_; ++peer) {
    if (peer == rank_) continue;
    util::log_info(util::Subsys::kTransport, [&] {
      Path* path = path_to(peer);
      const std::string address = peer_address(peer);
      const bool own_address =
          path && path->departures() && !path->departures()->peer_address(peer).empty();
      std::string how = !path ? std::string("no path")
                        : address.empty()
                            ? std::string(path->name()) + " (its address read when first used)"
                        : !own_address
                            // The address errors name it by is another path's (TCP's).
                            ? std::string(path->name()) + " (its TCP address " + address + ")"
                            : std::string(path->name()) + " at " + address;
      return "rank " + std::to_string(rank_) + " reaches rank " + std::to_string(peer) +
             " through " + how;
    });
  }
}

void Router::shutdown(std::chrono::steady_clock::time_point flush_deadline) {
  std::list<RequestPtr> victims;
  {
    util::MutexLock lock(mutex_);
    if (shutting_down_) return;
    shutting_down_ = true;
    refusing_.store(true, std::memory_order_release);
    victims = matcher_.take_all_posted();
  }
  auto aborted = make_error(ErrorCode::kAborted, "the transport was shut down");
  for (const RequestPtr& victim : victims) victim->fail(aborted);
  // A death being announced must go out before our goodbye (a thread that saw the failure
  // early may already be shutting us down).
  auto announced = [this] {
    util::MutexLock lock(mutex_);
    return announcements_in_flight_ == 0;
  };
  while (!announced() && std::chrono::steady_clock::now() < flush_deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  // What is queued on a path that cannot say goodbye goes first: a peer drains it when it
  // hears, on a path that can, that we left.
  for (const std::unique_ptr<Path>& path : paths_) {
    if (!path->departures()) path->shutdown(flush_deadline);
  }
  for (const std::unique_ptr<Path>& path : paths_) {
    if (path->departures()) path->shutdown(flush_deadline);
  }
}

}  // namespace weft::transport
