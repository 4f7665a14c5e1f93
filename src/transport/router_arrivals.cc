// The Router's side of streamed arrivals (streamed_arrivals.h): where the payload of a message
// that a path reads in place goes, and which payloads stay in their socket for now.
#include <cstring>
#include <new>

#include "transport/router.h"

namespace weft::transport {

namespace {

// A payload at least this large that nobody waits for yet, from a sender that none of our posted
// receives names (nothing can be waiting behind it), stays in its socket until its receive is
// posted; the path reads it into a buffer after all when the wait grows long (TcpPathOptions::
// park_limit), so that a rank waiting on something else never waits on it for long. Smaller
// ones go through a buffer: among them the segments of the collectives' pipelines (1 MiB by
// default), which come back to back, each a little ahead of its receive; parked, each would stop
// the stream until the one before it is handled.
constexpr uint64_t kParkBytes = 2 * 1024 * 1024;

}  // namespace

void Router::wake_parked() {
  for (StreamedReceiver* receiver : streamed_receivers_) receiver->parked_message_wanted();
}

bool Router::should_park(const FrameHeader& header) const {
  const int sender = static_cast<int>(header.source);
  // A receive posted from the sender waits for a later message, maybe behind this one.
  if (matcher_.has_posted_from(sender)) return false;
  return header.bytes >= kParkBytes || matcher_.held_from(sender) >= kHeldPerSender;
}

Arrival Router::begin_arrival(const FrameHeader& header, bool may_park) {
  Arrival arrival;
  RequestPtr conflicting;
  std::shared_ptr<const Error> mismatch;
  {
    util::MutexLock lock(mutex_);
    arrival.receive = matcher_.take_posted(header);
    if (arrival.receive) {
      mismatch = check_fit(*arrival.receive, header);
    } else if (may_park && should_park(header)) {
      arrival.unexpected = matcher_.add_parked(header);
      arrival.parked = true;
    } else {
      // Nobody waits for this tag, but someone may wait for another message of the same
      // operation from this sender while believing it runs something else.
      if ((conflicting = matcher_.take_conflicting_posted(header))) {
        mismatch = check_fit(*conflicting, header);
      }
      try {
        arrival.unexpected = matcher_.add_unexpected(header);
      } catch (const std::bad_alloc&) {
        arrival.no_room = true;
      }
    }
  }
  if (conflicting) {
    conflicting->fail(mismatch);  // the message itself waits, unexpected
  } else if (mismatch) {
    arrival.receive->fail(mismatch);  // the payload is read and dropped
    arrival.receive.reset();
  }
  return arrival;
}

void Router::finish_arrival(UnexpectedMessage* message) {
  RequestPtr claimed;
  FrameHeader header;
  {
    util::MutexLock lock(mutex_);
    message->complete = true;
    claimed = std::move(message->claimed_by);
    if (!claimed) return;
    header = message->header;
    // A receive that does not fit fails (post_recv; maybe only now, on its thread), and must
    // not be written: its buffer may be smaller than the message.
    if (!fits(*claimed, header)) {
      matcher_.erase_unexpected(message);
      return;
    }
    if (header.bytes) std::memcpy(claimed->data, message->buffer.get(), header.bytes);
    matcher_.erase_unexpected(message);
  }
  claimed->source = static_cast<int>(header.source);
  claimed->complete();
}

Arrival Router::resume_arrival(UnexpectedMessage* message, bool give_up) {
  Arrival arrival;
  util::MutexLock lock(mutex_);
  if (message->claimed_by) {
    RequestPtr receive = std::move(message->claimed_by);
    const bool fit = fits(*receive, message->header);
    matcher_.erase_unexpected(message);
    // A receive that does not fit fails (post_recv; maybe only now, on its thread): the payload
    // is dropped, never read into a buffer too small for it.
    if (fit) arrival.receive = std::move(receive);
    return arrival;
  }
  const bool held_enough =
      matcher_.held_from(static_cast<int>(message->header.source)) >= kHeldPerSender;
  if (!message->unpark_wanted && (!give_up || held_enough)) {
    arrival.unexpected = message;
    arrival.parked = true;
    return arrival;
  }
  try {
    matcher_.unpark(message);
    arrival.unexpected = message;
  } catch (const std::bad_alloc&) {
    matcher_.erase_unexpected(message);
    arrival.no_room = true;
  }
  return arrival;
}

void Router::abandon_arrival(UnexpectedMessage* message, std::shared_ptr<const Error> why) {
  RequestPtr claimed;
  {
    util::MutexLock lock(mutex_);
    claimed = std::move(message->claimed_by);
    matcher_.erase_unexpected(message);
  }
  if (claimed) claimed->fail(std::move(why));
}

}  // namespace weft::transport
