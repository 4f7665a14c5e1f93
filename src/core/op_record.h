// OpRecord — what the flight recorder and the timeline keep of one operation: a plain value,
// no string owned (op, algorithm and dtype names are static text), so that recording one costs
// a few stores and formatting it needs no allocation (the signal handler formats it too).
#pragma once

#include <time.h>

#include <cstdint>

#include "weft/dtype.h"
#include "weft/error.h"

namespace weft::core {

// How an operation ended, or that it has not.
enum class OpOutcome : uint8_t {
  kRunning = 0,
  kDone,
  kFailed,
  kTimeout,
  kPeerFailure,
  kMismatch,
  kAborted,
};

const char* name_of(OpOutcome outcome);
OpOutcome outcome_of(ErrorCode code);

// An operation as it starts: the recorder adds the start and end times.
struct OpStart {
  const char* op = "";              // "all_reduce", "send", ...: static text
  const char* algorithm = nullptr;  // coll::name_of(...): static text; null for p2p
  int64_t seq = -1;                 // the collective's sequence number; -1 for p2p
  int64_t bytes = -1;
  DType dtype = DType::kUInt8;
  int32_t peer = -1;  // p2p: the peer's group rank; collectives: the root, -1 for none
};

struct OpRecord {
  OpStart what;
  uint64_t index = 0;    // 1 + the number of ops this group recorded before it
  int64_t start_ns = 0;  // steady clock
  int64_t end_ns = 0;    // steady clock; 0 while running
  OpOutcome outcome = OpOutcome::kRunning;
};

// The steady clock in nanoseconds (what the timeline uses).
int64_t steady_now_ns();
// The same clock (CLOCK_MONOTONIC) read coarsely: to the last timer tick (1-4 ms), for a
// fraction of a precise read's cost, which two per op would add to an 8-byte all_reduce. What
// the flight recorder uses when there is no timeline: it says where a rank is, not how fast it
// went.
inline int64_t coarse_now_ns() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

}  // namespace weft::core
