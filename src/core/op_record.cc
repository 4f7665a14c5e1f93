#include "core/op_record.h"

#include <chrono>

namespace weft::core {

const char* name_of(OpOutcome outcome) {
  switch (outcome) {
    case OpOutcome::kRunning:
      return "running";
    case OpOutcome::kDone:
      return "done";
    case OpOutcome::kFailed:
      return "failed";
    case OpOutcome::kTimeout:
      return "timeout";
    case OpOutcome::kPeerFailure:
      return "peer_failure";
    case OpOutcome::kMismatch:
      return "mismatch";
    case OpOutcome::kAborted:
      return "aborted";
  }
  return "?";
}

OpOutcome outcome_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::kTimeout:
      return OpOutcome::kTimeout;
    case ErrorCode::kPeerFailure:
      return OpOutcome::kPeerFailure;
    case ErrorCode::kMismatch:
      return OpOutcome::kMismatch;
    case ErrorCode::kAborted:
      return OpOutcome::kAborted;
    default:
      return OpOutcome::kFailed;
  }
}

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace weft::core
