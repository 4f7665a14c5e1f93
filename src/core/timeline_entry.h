// TimelineEntry — what the timeline keeps of an operation: OpRecord's fields less the flight
// recorder's index, with times in TimelineClock ticks. The names are static text, so their
// pointers stay good for the process that wrote them, whatever medium they pass through.
#pragma once

#include <cstdint>

#include "core/op_record.h"

namespace weft::core {

struct TimelineEntry {
  int64_t start_ticks = 0;
  int64_t end_ticks = 0;
  int64_t seq = -1;
  int64_t bytes = -1;
  const char* op = "";
  const char* algorithm = nullptr;
  int32_t peer = -1;
  DType dtype = DType::kUInt8;
  OpOutcome outcome = OpOutcome::kRunning;
};

}  // namespace weft::core
