// Runs one collective call, on the caller's thread (synchronous call, nothing queued before it,
// no other thread running one of the group's collectives) or on the group's worker
// (asynchronous call, or a synchronous one behind queued work or beside another thread's).
// Never two of a group's at once: the runner claims the group (core/runner_claim.h), and only
// then takes the call's sequence number, so that every rank runs its calls in the order of their
// numbers, and calls issued from several threads at once pair up by number across ranks (the
// same calls if each rank issues them in the same order; a mismatch error if not), instead of
// waiting for each other in different orders. A failure other than a bad argument fails the
// group's collectives on every rank, so that no partner waits in vain. Every call is recorded
// (core/op_recorder.h) from the moment it runs until it ends.
#pragma once

#include <functional>
#include <memory>
#include <type_traits>

#include "coll/collective_call.h"
#include "core/communicator.h"
#include "weft/process_group.h"
#include "weft/work.h"

namespace weft::api {

struct CollectiveLaunch {
  const char* name;
  core::OpSignature signature;
  int64_t bytes = -1;
  std::size_t segment_bytes = 0;         // 0: default
  std::chrono::milliseconds timeout{0};  // 0: the group's
  const char* algorithm = nullptr;       // coll::name_of(the chosen one), for the recorder
};

using CollectiveBody = std::function<void(coll::CollectiveCall&)>;

// The body as the caller's thread runs it: borrowed, not copied (a std::function holding a
// body's captures allocates, a visible part of a small collective's cost).
struct BorrowedBody {
  void* body;
  void (*run)(void* body, coll::CollectiveCall& call);
};

// Runs the call on the caller's thread when it is synchronous, nothing is queued before it and
// no other thread runs one of the group's collectives; false (nothing done) otherwise.
bool run_here(core::Communicator& comm, const CollectiveLaunch& launch, bool async,
              BorrowedBody body);
// Queues the call on the group's worker; waits for it when it is synchronous.
std::shared_ptr<Work> run_queued(const std::shared_ptr<core::Communicator>& comm,
                                 CollectiveLaunch launch, CollectiveBody body, bool async);

// Returns null for a synchronous call (after it finished), a Work for an asynchronous one.
template <typename Body>
std::shared_ptr<Work> launch(const std::shared_ptr<core::Communicator>& comm,
                             const CollectiveLaunch& launch, Body&& body, bool async) {
  using Stored = std::remove_reference_t<Body>;
  BorrowedBody borrowed{
      const_cast<void*>(static_cast<const void*>(&body)),
      [](void* b, coll::CollectiveCall& call) { (*static_cast<Stored*>(b))(call); }};
  if (run_here(*comm, launch, async, borrowed)) return nullptr;
  return run_queued(comm, launch, CollectiveBody(std::forward<Body>(body)), async);
}

// A kInvalidArgument error with the group's context.
[[noreturn]] void invalid_argument(const core::Communicator& comm, const char* op,
                                   const std::string& message);

}  // namespace weft::api
