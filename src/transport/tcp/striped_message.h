// A message split across several connections of one peer pair (streams.h), as each side keeps
// track of it: the sender until every piece is written, the receiver until every piece is in.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

#include "transport/matcher.h"
#include "transport/request.h"
#include "transport/streamed_arrivals.h"
#include "util/mutex.h"
#include "weft/error.h"

namespace weft::transport {

// The sending side: the send completes when its last piece is written, on whichever connection.
struct StripedSend {
  StripedSend(RequestPtr request, uint32_t pieces)
      : request(std::move(request)), pieces_left(pieces) {}
  RequestPtr request;
  std::atomic<uint32_t> pieces_left;
};

// The receiving side: where the pieces go, and what becomes of the message once the last one is
// in (or will never be). Its receive is completed or failed only then, so no piece is ever
// written into a buffer whose owner was told the receive is over; a receive cancelled meanwhile
// is `detach`ed instead, and the pieces still to come are dropped.
class StripedArrival {
 public:
  // Exactly one of `receive` (it matched a posted receive) and `unexpected` (nobody waits yet)
  // is set, or neither (the message is dropped: its receive expected something else).
  StripedArrival(RequestPtr receive, UnexpectedMessage* unexpected, int source, uint32_t pieces)
      : receive_(std::move(receive)),
        unexpected_(unexpected),
        source_(source),
        base_(receive_     ? static_cast<uint8_t*>(receive_->data)
              : unexpected ? unexpected->buffer.get()
                           : nullptr),
        pieces_left_(pieces) {}

  // Where the piece at `offset` goes now; null: it is read and dropped. Ask it with the input
  // lock of the connection that will read the piece held (detach relies on it).
  uint8_t* target(uint64_t offset) const {
    if (!base_ || detached_.load(std::memory_order_acquire)) return nullptr;
    return base_ + offset;
  }
  bool is_for(const Request& receive) const { return receive_.get() == &receive; }

  // A piece is in (`failure` null) or never will be. The last one settles the message: its
  // receive completes (or fails with the first failure), an unexpected message is finished or
  // abandoned through `events`.
  void piece_done(StreamedArrivalEvents& events, const std::shared_ptr<const Error>& failure) {
    if (failure) {
      util::MutexLock lock(mutex_);
      if (!failure_) failure_ = failure;
    }
    if (pieces_left_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    settle(events);
  }

  // The receive is being cancelled: pieces that come later are dropped, and the receive is
  // never touched again (the caller fails it). False when it is too late: the message settled.
  bool detach() {
    util::MutexLock lock(mutex_);
    if (settled_) return false;
    detached_.store(true, std::memory_order_release);
    return true;
  }

 private:
  void settle(StreamedArrivalEvents& events) {
    std::shared_ptr<const Error> failure;
    {
      util::MutexLock lock(mutex_);
      settled_ = true;
      failure = failure_;
      if (receive_ && !detached_.load(std::memory_order_relaxed)) {
        // Under the lock: a detach() that came first has failed the receive already.
        if (failure) {
          receive_->fail(failure);
        } else {
          receive_->source = source_;
          receive_->complete();
        }
      }
    }
    if (!unexpected_) return;
    if (failure) {
      events.abandon_arrival(unexpected_, failure);
    } else {
      events.finish_arrival(unexpected_);
    }
  }

  util::Mutex mutex_;
  const RequestPtr receive_;
  UnexpectedMessage* const unexpected_;
  const int source_;
  uint8_t* const base_;
  std::atomic<uint32_t> pieces_left_;
  std::atomic<bool> detached_{false};
  std::shared_ptr<const Error> failure_ WEFT_GUARDED_BY(mutex_);
  bool settled_ WEFT_GUARDED_BY(mutex_) = false;
};

// A piece a stream is to carry next, announced by the header on the peer's first connection.
struct DuePiece {
  std::shared_ptr<StripedArrival> message;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

}  // namespace weft::transport
