#include "core/progress_board.h"

#include <algorithm>
#include <cstdio>

#include "util/deadline.h"
#include "util/log.h"
#include "weft/error.h"

namespace weft::core {

namespace {

// A value no entry ever has: compare_set(key, it, it) returns it for a missing key (torch's
// rule, which every weft store follows) and the value otherwise, without writing either way.
// One round trip that never blocks, where check() then get() would take two.
const Bytes kNeverWritten = to_bytes("?");

}  // namespace

ProgressBoard::ProgressBoard(DeadlineStore& store, uint64_t context, int rank, int members)
    : store_(store), rank_(rank), members_(members) {
  char prefix[48];
  std::snprintf(prefix, sizeof prefix, "weft/progress/%016llx/",
                static_cast<unsigned long long>(context));
  prefix_ = prefix;
}

std::string ProgressBoard::key_of(int member) const { return prefix_ + std::to_string(member); }

std::string ProgressBoard::point_to_point_key_of(int member) const {
  return key_of(member) + "/p2p";
}

std::string ProgressBoard::diagnosis_key(int64_t seq) const {
  return prefix_ + "stall/" + std::to_string(seq);
}

void ProgressBoard::write(const std::string& key, const std::string& value,
                          Clock::time_point until) {
  try {
    store_.set(key, to_bytes(value), until);
  } catch (const Error& error) {
    util::log_debug(util::Subsys::kStore,
                    [&] { return "progress board: cannot write " + key + ": " + error.what(); });
  }
}

std::optional<std::string> ProgressBoard::peek(const std::string& key, Clock::time_point until) {
  Bytes value = store_.compare_set(key, kNeverWritten, kNeverWritten, until);
  if (value == kNeverWritten) return std::nullopt;
  return to_string(value);
}

void ProgressBoard::report_collective(const char* op, int64_t seq, Clock::time_point until) {
  util::MutexLock lock(mutex_);
  if (reported(seq)) return;
  reported_seq_.store(seq, std::memory_order_relaxed);
  reported_op_ = op;
  write(key_of(rank_), collective_entry(op, seq, /*left=*/false), until);
}

void ProgressBoard::leave_collective(int64_t seq) {
  util::MutexLock lock(mutex_);
  if (!reported(seq)) return;
  // Not reported again: a later wait of the same seq (none: it ended) must not rewrite it.
  reported_seq_.store(-1, std::memory_order_relaxed);
  write(key_of(rank_), collective_entry(reported_op_.c_str(), seq, /*left=*/true),
        Clock::now() + kMaxReportAfter);
}

void ProgressBoard::report_point_to_point(const std::string& what, Clock::time_point until) {
  util::MutexLock lock(mutex_);
  ++point_to_point_[what];
  if (point_to_point_written_ == what) return;
  point_to_point_written_ = what;
  write(point_to_point_key_of(rank_), what, until);
}

void ProgressBoard::end_point_to_point(const std::string& what) {
  util::MutexLock lock(mutex_);
  auto it = point_to_point_.find(what);
  if (it == point_to_point_.end()) return;
  if (--it->second == 0) point_to_point_.erase(it);
  // The key shows a wait that is still on, if any.
  std::string now = point_to_point_.empty() ? "" : point_to_point_.begin()->first;
  if (now == point_to_point_written_) return;
  point_to_point_written_ = now;
  write(point_to_point_key_of(rank_), now, Clock::now() + kMaxReportAfter);
}

Sighting ProgressBoard::read(int member, Clock::time_point until) {
  Sighting sighting;
  if (Clock::now() >= until) return sighting;
  try {
    if (std::optional<std::string> entry = peek(key_of(member), until)) {
      read_collective_entry(*entry, sighting);
    }
    if (std::optional<std::string> waiting = peek(point_to_point_key_of(member), until)) {
      sighting.waiting = *waiting;
    }
    sighting.known = true;
  } catch (const Error& error) {
    util::log_debug(util::Subsys::kStore, [&] {
      return "progress board: cannot read rank " + std::to_string(member) + ": " + error.what();
    });
  }
  return sighting;
}

bool ProgressBoard::claim_diagnosis(int64_t seq, Clock::time_point until) {
  try {
    return store_.add(diagnosis_key(seq) + "/claims", 1, until) == 1;
  } catch (const Error&) {
    return true;  // nobody can tell us: read for ourselves
  }
}

std::optional<std::string> ProgressBoard::await_diagnosis(int64_t seq, Clock::time_point until) {
  try {
    return to_string(store_.wait_and_get(diagnosis_key(seq), until));
  } catch (const Error&) {
    return std::nullopt;
  }
}

ProgressBoard::Diagnosis ProgressBoard::diagnose(
    const char* op, int64_t seq, Clock::time_point until,
    const std::function<bool(Clock::time_point)>& pause) {
  Diagnosis diagnosis;
  if (!claim_diagnosis(seq, until)) {
    // Its author timed out earlier and reads for as long as we would: wait up to twice that.
    auto budget = until - Clock::now();
    std::optional<std::string> verdict = await_diagnosis(seq, until + budget);
    if (verdict && !verdict->empty()) {
      diagnosis.text = *verdict;
      return diagnosis;
    }
    // No verdict in time (its author stopped, or the store is slow): read for ourselves.
    until = Clock::now() + budget;
  }
  std::vector<Sighting> seen(members_);
  for (int m = 0; m < members_; ++m) {
    seen[m] = m == rank_ ? Sighting{true, seq, op} : read(m, until);
  }
  // A member that arrived just before our timeout reports report_after() later: look again
  // at the ones behind, pausing in the caller's wait (which may still end) between looks.
  for (;;) {
    std::vector<int> behind = ranks_behind(op, seq, seen);
    if (behind.empty() || Clock::now() >= until) break;
    if (pause(std::min(until, Clock::now() + std::chrono::milliseconds(100)))) {
      diagnosis.stopped = true;
      publish_diagnosis(seq, "");
      return diagnosis;
    }
    for (int m : behind) {
      Sighting again = read(m, until);
      if (again.known) seen[m] = again;  // a late look that got no answer changes nothing
    }
  }
  diagnosis.text = describe_stall(op, seq, seen);
  publish_diagnosis(seq, diagnosis.text);
  return diagnosis;
}

void ProgressBoard::publish_diagnosis(int64_t seq, const std::string& text) {
  // After the diagnosis' own time: one more round trip, which a store in reach answers.
  write(diagnosis_key(seq), text, Clock::now() + kPublishWithin);
}

}  // namespace weft::core
