// ProgressBoard — where the members of a group say, through the job's store, which operation
// they are stuck waiting in, so that a member whose wait times out can name the ranks that had
// not reached the operation (torch's monitored_barrier, but always on and free when nothing
// is slow).
//
// What is written, and when: nothing until one of a member's waits has lasted report_after()
// of its timeout (a quarter, at most 1 s). Then the member writes, once per collective, the
// group's key "weft/progress/<group context>/<rank>" = "<seq> <op> waiting", and "... left"
// when that collective ends; a point-to-point wait that lasts as long writes ".../<rank>/p2p"
// = "recv from rank 2" (empty again when no such wait is left). So the store holds at most two
// keys per member and group, calls that never wait that long touch nothing, and a slow call
// costs two store writes.
//
// What is read: when a collective's wait over the transport times out, the first member to time
// out (it claims "the diagnosis" with one store add) reads every member's keys, waiting up to
// report_after() for members that had not reported reaching the op (one that arrived just
// before the timeout reports by then), and publishes its verdict; the others read that verdict
// instead of all keys (a job of n ranks asks the store O(n) questions, not O(n^2)).
//
// Thread-safe. Every store call ends by a deadline (DeadlineStore): a report by the caller's,
// the write that ends a reported wait within kMaxReportAfter, so a rank cut off from the store
// still fails its op at its timeout. A store that fails or does not answer in time makes a
// sighting unknown, never a different error.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/deadline_store.h"
#include "core/sightings.h"
#include "util/mutex.h"

namespace weft::core {

class ProgressBoard {
 public:
  using Clock = std::chrono::steady_clock;

  ProgressBoard(DeadlineStore& store, uint64_t context, int rank, int members);

  // How long a wait bounded by `timeout` lasts before it reports: a quarter, but at least
  // kMinReportAfter (a report costs a store round trip) and at most kMaxReportAfter (a timeout
  // waits that long again for late reports).
  static constexpr std::chrono::milliseconds kMinReportAfter{20};
  static constexpr std::chrono::milliseconds kMaxReportAfter{1000};
  static std::chrono::milliseconds report_after(std::chrono::milliseconds timeout) {
    return std::clamp(timeout / 4, kMinReportAfter, kMaxReportAfter);
  }

  // Whether collective `seq` was reported: its later waits need no report point. Inline, as
  // end_collective: every wait that does not finish at once checks it.
  bool reported(int64_t seq) const { return reported_seq_.load(std::memory_order_relaxed) == seq; }
  // This member is waiting in collective `op` #`seq` (written once per seq, by `until`).
  void report_collective(const char* op, int64_t seq, Clock::time_point until);
  // Collective `seq` ended here (a store write only when it was reported).
  void end_collective(int64_t seq) {
    if (reported(seq)) [[unlikely]]
      leave_collective(seq);
  }
  // This member waits in a point-to-point op ("recv from rank 2"); end_point_to_point with
  // the same text when that wait ends.
  void report_point_to_point(const std::string& what, Clock::time_point until);
  void end_point_to_point(const std::string& what);

  // What `member` last wrote; not known when the store did not answer by `until`.
  Sighting read(int member, Clock::time_point until);
  // Why collective `op` #`seq` timed out here, as describe_stall says it from every member's
  // sighting (mine included; this member must have reported itself in it). Members not yet seen
  // reaching it are read again until `until`; between looks, `pause(t)` waits in the caller's
  // own wait until t and says whether that wait ended after all (then the diagnosis stops).
  // Only the first member to ask reads; the others take its verdict.
  struct Diagnosis {
    std::string text;      // empty when unknown (or stopped)
    bool stopped = false;  // pause() said the caller's wait ended
  };
  Diagnosis diagnose(const char* op, int64_t seq, Clock::time_point until,
                     const std::function<bool(Clock::time_point)>& pause);

 private:
  std::string key_of(int member) const;
  std::string point_to_point_key_of(int member) const;
  std::string diagnosis_key(int64_t seq) const;
  void leave_collective(int64_t seq);
  // A key's value, or nullopt when it was never written; never blocks on a missing key.
  std::optional<std::string> peek(const std::string& key, Clock::time_point until);
  // Writes, swallowing (and logging) store failures: a report must never fail an op.
  void write(const std::string& key, const std::string& value, Clock::time_point until);
  bool claim_diagnosis(int64_t seq, Clock::time_point until);
  std::optional<std::string> await_diagnosis(int64_t seq, Clock::time_point until);
  void publish_diagnosis(int64_t seq, const std::string& text);

  static constexpr std::chrono::milliseconds kPublishWithin{100};

  DeadlineStore& store_;
  std::string prefix_;  // "weft/progress/<context>/"
  int rank_;
  int members_;
  std::atomic<int64_t> reported_seq_{-1};
  util::Mutex mutex_;
  std::string reported_op_ WEFT_GUARDED_BY(mutex_);
  // Waits reported and not ended.
  std::map<std::string, int> point_to_point_ WEFT_GUARDED_BY(mutex_);
  std::string point_to_point_written_ WEFT_GUARDED_BY(mutex_);  // the p2p key's value
};

}  // namespace weft::core
