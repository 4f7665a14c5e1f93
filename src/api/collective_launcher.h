// Runs one collective call: stamps its sequence number when issued, then runs its body on the
// caller's thread (synchronous call, nothing queued before it) or on the group's worker
// (asynchronous call, or a synchronous one behind queued work). A failure other than a bad
// argument fails the group's collectives on every rank, so that no partner waits in vain.
#pragma once

#include <functional>
#include <memory>

#include "coll/collective_call.h"
#include "core/communicator.h"
#include "weft/process_group.h"
#include "weft/work.h"

namespace weft::api {

struct CollectiveLaunch {
  const char* name;
  core::OpSignature signature;
  int64_t bytes = -1;
  std::size_t segment_bytes = 0;  // 0: default
  std::function<void(coll::CollectiveCall&)> body;
};

// Returns null for a synchronous call (after it finished), a Work for an asynchronous one.
std::shared_ptr<Work> launch(const std::shared_ptr<core::Communicator>& comm,
                             CollectiveLaunch launch, bool async);

// A kInvalidArgument error with the group's context.
[[noreturn]] void invalid_argument(const core::Communicator& comm, const char* op,
                                   const std::string& message);

}  // namespace weft::api
