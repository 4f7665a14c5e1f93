// OutstandingRequests — the sends and receives an algorithm has posted, so that leaving by an
// exception never leaves a transfer running into scratch memory the unwinding frees.
//
// An algorithm adds every request it posts. On the normal path it waits for them itself (or
// calls wait_all()); waiting again for a finished request costs nothing. If the scope is left by
// an exception, the destructor settles every request through CollectiveCall::wait_all, which
// cancels all requests behind the first one that fails or times out; errors there are dropped
// (the exception in flight is the cause). Declare it AFTER the buffers its requests use, so it
// is destroyed before them.
//
// NOTE(coll-interface): CollectiveCall has no cancel(); after a failure that does not fail the
// other requests (a mismatch on one message), settling waits for them up to the call's
// deadline. A CollectiveCall::cancel_all would end that wait at once.
//
// Not thread-safe: one call runs on one thread.
#pragma once

#include <exception>
#include <vector>

#include "coll/collective_call.h"

namespace weft::coll {

class OutstandingRequests {
 public:
  explicit OutstandingRequests(CollectiveCall& call)
      : call_(call), exceptions_at_start_(std::uncaught_exceptions()) {}
  OutstandingRequests(const OutstandingRequests&) = delete;
  OutstandingRequests& operator=(const OutstandingRequests&) = delete;

  ~OutstandingRequests() {
    if (std::uncaught_exceptions() == exceptions_at_start_) return;
    try {
      call_.wait_all(requests_);
    } catch (...) {  // NOLINT(bugprone-empty-catch): the exception in flight is the cause
    }
  }

  // Keeps `request` and returns it.
  core::RequestPtr add(core::RequestPtr request) {
    requests_.push_back(request);
    return request;
  }

  // Waits for every request added so far, then forgets them.
  void wait_all() {
    call_.wait_all(requests_);
    requests_.clear();
  }

 private:
  CollectiveCall& call_;
  int exceptions_at_start_;
  std::vector<core::RequestPtr> requests_;
};

}  // namespace weft::coll
