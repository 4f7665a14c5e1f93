// What the log says about collectives: at INFO, the algorithm chosen for each op and size class
// (once per class and group, so that a long job's log stays readable; a group made again says
// it again); at TRACE, every op as it starts and ends. Callers test op_log_enabled() first: a
// job without WEFT_DEBUG=info pays one relaxed load per call.
#pragma once

#include <cstdint>

#include "api/collective_launcher.h"
#include "core/communicator.h"
#include "util/log.h"

namespace weft::api {

inline bool op_log_enabled() { return util::log_enabled(LogLevel::kInfo, util::Subsys::kColl); }

void log_op_start(const core::Communicator& comm, const CollectiveLaunch& launch, int64_t seq);
void log_op_end(const core::Communicator& comm, const CollectiveLaunch& launch, int64_t seq,
                const char* outcome);

}  // namespace weft::api
