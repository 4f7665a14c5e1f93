#include "core/op_recorder.h"

#include <algorithm>

#include "core/flight_dump.h"
#include "util/settings.h"

namespace weft::core {

namespace {

std::size_t flight_capacity() {
  int64_t entries = util::setting_int("WEFT_FLIGHT_RECORDER");
  return entries > 0 ? static_cast<std::size_t>(entries) : 0;
}

}  // namespace

OpRecorder::OpRecorder(const std::string& group, const void* world, int world_rank, int world_size)
    : collectives_(flight_capacity()),
      point_to_point_(collectives_.capacity()),
      trace_(RankTrace::for_world(world, world_rank, world_size)) {
  if (trace_) {
    timelines_ = trace_->add_group(group);
    clock_ = trace_->clock();
    collectives_.count_in_ticks(clock_, trace_->started());
    point_to_point_.count_in_ticks(clock_, trace_->started());
  }
  active_ = collectives_.enabled() || timelines_ != nullptr;
  register_flight_recorder(&collectives_, group, world_rank);
  register_flight_recorder(&point_to_point_, group, world_rank);
}

OpRecorder::~OpRecorder() {
  unregister_flight_recorder(&point_to_point_);
  unregister_flight_recorder(&collectives_);
}

std::vector<OpRecord> OpRecorder::flight_snapshot() const {
  std::vector<OpRecord> records = collectives_.snapshot();
  std::vector<OpRecord> point_to_point = point_to_point_.snapshot();
  records.insert(records.end(), point_to_point.begin(), point_to_point.end());
  std::stable_sort(records.begin(), records.end(),
                   [](const OpRecord& a, const OpRecord& b) { return a.start_ns < b.start_ns; });
  return records;
}

void OpRecorder::append_to_timeline(const Token& token, int64_t end, OpOutcome outcome) {
  const OpStart& what = token.what;
  TimelineEntry entry{token.start,    end,       what.seq,   what.bytes, what.op,
                      what.algorithm, what.peer, what.dtype, outcome};
  if (what.seq >= 0) {
    timelines_->collectives.append(entry);
  } else {
    util::MutexLock lock(point_to_point_timeline_mutex_);
    timelines_->point_to_point.append(entry);
  }
}

void OpRecorder::dump(const std::string& group, int rank, int world_rank, const Error& cause) {
  if (!flight_enabled()) return;
  if (!dumped_.exchange(true))
    log_flight_recorder(flight_snapshot(), group, rank, world_rank, cause);
  write_flight_files(world_rank, cause, group);
}

}  // namespace weft::core
