#include "transport/matcher.h"

namespace weft::transport {

bool Matcher::matches(const Request& receive, const FrameHeader& header) {
  return receive.context == header.context && receive.tag == header.tag &&
         (receive.peer == kAnyPeer || receive.peer == static_cast<int>(header.source));
}

void Matcher::add_posted(RequestPtr receive) {
  if (spare_posted_.empty()) {
    posted_.push_back(std::move(receive));
    return;
  }
  posted_.splice(posted_.end(), spare_posted_, spare_posted_.begin());
  posted_.back() = std::move(receive);
}

RequestPtr Matcher::remove_posted(std::list<RequestPtr>::iterator it) {
  RequestPtr found = std::move(*it);
  if (spare_posted_.size() < kSpareNodes) {
    spare_posted_.splice(spare_posted_.begin(), posted_, it);
  } else {
    posted_.erase(it);
  }
  return found;
}

RequestPtr Matcher::take_posted(const FrameHeader& header) {
  for (auto it = posted_.begin(); it != posted_.end(); ++it) {
    if (matches(**it, header)) return remove_posted(it);
  }
  return nullptr;
}

UnexpectedMessage* Matcher::add_unexpected(const FrameHeader& header) {
  // The buffer first: if it cannot be had (std::bad_alloc), nothing is queued.
  make_room_for_sender(header.source);
  std::size_t capacity = 0;
  BufferPool::Buffer buffer = pool_.take(header.bytes, capacity);
  UnexpectedMessage& message = queue_unexpected(header);
  message.buffer = std::move(buffer);
  message.capacity = capacity;
  hold(message, capacity);
  return &message;
}

UnexpectedMessage* Matcher::add_parked(const FrameHeader& header) {
  make_room_for_sender(header.source);  // unpark() must not allocate for it
  UnexpectedMessage& message = queue_unexpected(header);
  message.parked = true;
  ++parked_;
  return &message;
}

UnexpectedMessage& Matcher::queue_unexpected(const FrameHeader& header) {
  if (spare_unexpected_.empty()) {
    unexpected_.emplace_back();
  } else {
    unexpected_.splice(unexpected_.end(), spare_unexpected_, spare_unexpected_.begin());
  }
  UnexpectedMessage& message = unexpected_.back();
  message.header = header;
  return message;
}

void Matcher::unpark(UnexpectedMessage* message) {
  std::size_t capacity = 0;
  message->buffer = pool_.take(message->header.bytes, capacity);
  message->capacity = capacity;
  hold(*message, capacity);
  message->parked = false;
  message->unpark_wanted = false;
  --parked_;
}

void Matcher::expect_senders(int count) {
  if (count > 0) make_room_for_sender(static_cast<uint32_t>(count - 1));
}

void Matcher::make_room_for_sender(uint32_t source) {
  if (source >= held_.size()) held_.resize(std::size_t{source} + 1, 0);
}

void Matcher::hold(const UnexpectedMessage& message, std::size_t capacity) {
  held_[static_cast<std::size_t>(message.header.source)] += capacity;
}

void Matcher::release(const UnexpectedMessage& message, std::size_t capacity) {
  held_[static_cast<std::size_t>(message.header.source)] -= capacity;
}

std::size_t Matcher::held_from(int peer) const {
  const auto sender = static_cast<std::size_t>(peer);
  return peer >= 0 && sender < held_.size() ? held_[sender] : 0;
}

bool Matcher::has_posted_from(int peer) const {
  for (const RequestPtr& receive : posted_) {
    if (receive->peer == peer || receive->peer == kAnyPeer) return true;
  }
  return false;
}

bool Matcher::want_parked_from(int peer) {
  if (parked_ == 0) return false;
  bool any = false;
  for (UnexpectedMessage& message : unexpected_) {
    if (message.parked && !message.claimed_by &&
        (peer == kAnyPeer || static_cast<int>(message.header.source) == peer)) {
      message.unpark_wanted = any = true;
    }
  }
  return any;
}

UnexpectedMessage* Matcher::find_unexpected(const Request& receive) {
  for (UnexpectedMessage& message : unexpected_) {
    if (!message.claimed_by && matches(receive, message.header)) return &message;
  }
  return nullptr;
}

void Matcher::erase_unexpected(UnexpectedMessage* message) {
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    if (&*it == message) {
      if (it->parked) --parked_;
      if (it->buffer) {
        release(*it, it->capacity);
        pool_.give_back(std::move(it->buffer), it->capacity);
      }
      if (spare_unexpected_.size() < kSpareNodes) {
        *it = UnexpectedMessage{};
        spare_unexpected_.splice(spare_unexpected_.begin(), unexpected_, it);
      } else {
        unexpected_.erase(it);
      }
      return;
    }
  }
}

bool Matcher::erase_posted(const Request* receive) {
  for (auto it = posted_.begin(); it != posted_.end(); ++it) {
    if (it->get() == receive) {
      remove_posted(it);
      return true;
    }
  }
  return false;
}

std::list<RequestPtr> Matcher::take_posted_from(int peer) {
  std::list<RequestPtr> taken;
  for (auto it = posted_.begin(); it != posted_.end();) {
    if (peer == kAnyPeer || (*it)->peer == peer) {
      taken.push_back(std::move(*it));
      it = posted_.erase(it);
    } else {
      ++it;
    }
  }
  return taken;
}

std::list<RequestPtr> Matcher::take_posted_of_context(uint64_t context) {
  std::list<RequestPtr> taken;
  for (auto it = posted_.begin(); it != posted_.end();) {
    if ((*it)->context == context) {
      taken.push_back(std::move(*it));
      it = posted_.erase(it);
    } else {
      ++it;
    }
  }
  return taken;
}

namespace {
bool same_operation(const Request& receive, const FrameHeader& header) {
  return receive.operation_tagged && header.operation_tagged && receive.context == header.context &&
         (receive.tag >> kOperationShift) == (header.tag >> kOperationShift) &&
         receive.peer == static_cast<int>(header.source) && receive.signature != header.signature;
}
}  // namespace

RequestPtr Matcher::take_conflicting_posted(const FrameHeader& header) {
  if (!header.operation_tagged) return nullptr;
  for (auto it = posted_.begin(); it != posted_.end(); ++it) {
    if (same_operation(**it, header)) return remove_posted(it);
  }
  return nullptr;
}

const UnexpectedMessage* Matcher::find_conflicting_unexpected(const Request& receive) const {
  if (!receive.operation_tagged) return nullptr;
  for (const UnexpectedMessage& message : unexpected_) {
    if (same_operation(receive, message.header)) return &message;
  }
  return nullptr;
}

bool Matcher::release_claim(const Request* receive) {
  for (UnexpectedMessage& message : unexpected_) {
    if (message.claimed_by.get() == receive) {
      message.claimed_by.reset();
      return true;
    }
  }
  return false;
}

std::list<RequestPtr> Matcher::take_claims_from(int peer) {
  std::list<RequestPtr> taken;
  for (UnexpectedMessage& message : unexpected_) {
    if (message.claimed_by && !message.complete &&
        static_cast<int>(message.header.source) == peer) {
      taken.push_back(std::move(message.claimed_by));
      message.claimed_by.reset();
    }
  }
  return taken;
}

bool fits(const Request& receive, const FrameHeader& header) {
  return header.signature == receive.signature && header.bytes == receive.bytes;
}

std::shared_ptr<const Error> check_fit(Request& receive, const FrameHeader& header) {
  if (fits(receive, header)) return nullptr;
  receive.received_signature = header.signature;
  receive.received_bytes = header.bytes;
  receive.source = static_cast<int>(header.source);
  return std::make_shared<const Error>(
      ErrorCode::kMismatch, "rank " + std::to_string(header.source) + " sent " +
                                std::to_string(header.bytes) + " bytes for another operation; " +
                                "this receive expects " + std::to_string(receive.bytes) + " bytes");
}

}  // namespace weft::transport
