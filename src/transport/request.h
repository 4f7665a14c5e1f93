// Request — one posted send or receive, and how its poster waits for it.
//
// The poster fills the description (kind, peer, context, tag, signature, buffer) and hands a
// shared_ptr to a Transport; the transport fills the outcome and completes or fails it exactly
// once. The buffer is the caller's: it must stay valid until the request is done or cancelled.
// Waiting spins for a short, bounded time, then sleeps on a futex until the deadline.
// Thread-safety: description fields are written before posting and then read-only; outcome
// fields are written before the state is published (release) and read after (acquire).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include "transport/frame_header.h"
#include "util/block_recycler.h"
#include "weft/error.h"

namespace weft::transport {

inline constexpr int kAnyPeer = -1;

class Request {
 public:
  enum class Kind : uint8_t { kSend, kRecv };

  Request(Kind kind, int peer, uint64_t context, uint64_t tag, const Signature& signature,
          void* data, std::size_t bytes)
      : kind(kind),
        peer(peer),
        context(context),
        tag(tag),
        signature(signature),
        data(data),
        bytes(bytes) {}

  // --- description --------------------------------------------------------------------------
  const Kind kind;
  const int peer;  // world rank, or kAnyPeer for a receive from anyone
  const uint64_t context;
  const uint64_t tag;
  const Signature signature;
  void* const data;
  const std::size_t bytes;        // payload length (send) or buffer capacity (receive)
  bool operation_tagged = false;  // see kOperationShift; set before posting

  // --- outcome ------------------------------------------------------------------------------
  int source = -1;               // who sent a completed receive
  Signature received_signature;  // what the sender said it runs (kMismatch)
  uint64_t received_bytes = 0;   // what the sender sent (kMismatch)

  bool done() const {
    uint32_t state = state_.load(std::memory_order_acquire);
    return state == kDone || state == kFailed;
  }
  bool failed() const { return state_.load(std::memory_order_acquire) == kFailed; }
  // Valid once failed().
  const std::shared_ptr<const Error>& error() const { return error_; }

  // Waits until done or the deadline; returns done(). For up to spin_us it first polls: calls
  // poll (which may move this request along on the calling thread, and says whether it moved
  // bytes) and yields between checks, and spins spin_us more after a spin that moved bytes;
  // then it calls before_sleep once (the last chance to look) and sleeps on a futex.
  // may_yield: whether the spin gives the core up between checks (see util::spin_until).
  bool wait(std::chrono::steady_clock::time_point deadline, int64_t spin_us,
            const std::function<bool()>& poll = {}, const std::function<void()>& before_sleep = {},
            bool may_yield = true);

  // Called by the transport, once.
  void complete();
  void fail(std::shared_ptr<const Error> error);

 private:
  static constexpr uint32_t kPending = 0, kDone = 1, kFailed = 2, kClaimed = 3;
  // Takes the request from pending to claimed; only the winner may publish an outcome.
  bool claim();
  void publish(uint32_t state);

  std::atomic<uint32_t> state_{kPending};
  std::atomic<uint32_t> sleepers_{0};
  std::shared_ptr<const Error> error_;
};

using RequestPtr = std::shared_ptr<Request>;

// A request in a recycled block (util/block_recycler.h): one is made for every message, and the
// message path should not need the heap.
template <class... Args>
RequestPtr make_request(Args&&... args) {
  return std::allocate_shared<Request>(util::RecyclingAllocator<Request>(),
                                       std::forward<Args>(args)...);
}

// The header of the message a send request carries, from world rank `source`.
inline FrameHeader data_header(const Request& send, int source) {
  FrameHeader header;
  header.kind = FrameKind::kData;
  header.source = static_cast<uint32_t>(source);
  header.context = send.context;
  header.tag = send.tag;
  header.bytes = send.bytes;
  header.signature = send.signature;
  header.operation_tagged = send.operation_tagged;
  return header;
}

}  // namespace weft::transport
