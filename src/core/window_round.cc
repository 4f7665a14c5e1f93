// Communicator's side of the shared-memory window: making it at the group's first same-host
// collective, and one round of its protocol with failures turned into this group's errors.
#include <algorithm>
#include <cstdio>

#include "core/communicator.h"
#include "util/log.h"
#include "util/settings.h"

namespace weft::core {

using transport::RoundStamp;
using transport::SlotStores;
using transport::WaitOutcome;

LocalWindow* Communicator::local_window(const OpInfo& info,
                                        std::chrono::steady_clock::time_point deadline) {
  // Once open, the window stays until the group dies: no lock on every collective's path.
  if (LocalWindow* open = open_window_.load(std::memory_order_acquire)) return open;
  util::MutexLock lock(window_mutex_);
  if (window_opened_ || !single_host_) return window_.get();
  window_opened_ = true;
  char prefix[64];
  std::snprintf(prefix, sizeof prefix, "weft/shm/%016llx/",
                static_cast<unsigned long long>(context_base_));
  LocalWindowOptions options;
  options.store = &world_->store();
  options.key_prefix = prefix;
  options.group_name = name_;
  options.rank = rank_;
  options.members = size();
  options.deadline = deadline;
  options.interrupted = [this] { return collectives_broken(); };
  options.spin_us = world_->configured_spin_us();
  options.member_reads = util::setting_choice("WEFT_SHM_SINGLE_COPY") != "off";
  const std::string stores = util::setting_choice("WEFT_SHM_SLOT_STORES");
  options.slot_stores = stores == "ordinary"    ? SlotStores::kOrdinary
                        : stores == "streaming" ? SlotStores::kStreaming
                                                : SlotStores::kAdaptive;
  try {
    window_ = LocalWindow::open(options);
  } catch (const Error& error) {
    if (error.code() == ErrorCode::kTimeout) fail_window_setup(options, info, error);
    // The group failed while a member was still to come: its error, with the root cause.
    if (error.code() == ErrorCode::kAborted && collectives_broken()) {
      throw_if_collectives_broken(info);
    }
    // A member's control block failed its checks (the window is poisoned): this call's context.
    if (error.code() == ErrorCode::kPeerFailure) {
      throw Error(ErrorCode::kPeerFailure, error.message(), context_for(info));
    }
    throw;
  }
  open_window_.store(window_.get(), std::memory_order_release);
  return window_.get();
}

void Communicator::complete_window_round(LocalWindow& window, const OpSignature& op,
                                         std::size_t round_bytes, const OpInfo& info,
                                         util::LazyDeadline& deadline) {
  arrive_window_round(window, op, round_bytes, info);
  wait_window_round(window, info, deadline);
}

void Communicator::arrive_window_round(LocalWindow& window, const OpSignature& op,
                                       std::size_t round_bytes, const OpInfo& info) {
  window.arrive(RoundStamp{op.pack(), info.seq, round_bytes});
}

void Communicator::wait_window_round(LocalWindow& window, const OpInfo& info,
                                     util::LazyDeadline& deadline) {
  window_wait_ = {&info, &deadline};
  WaitResult result = window.wait_all(deadline, broken_check_);
  if (result.outcome != WaitOutcome::kArrived) fail_window_wait(window, result, info, true);
  if (!window.stamps_may_differ()) return;
  StampMismatch mismatch = window.find_other_stamp();
  if (mismatch.member >= 0) fail_window_mismatch(window, mismatch, info);
}

void Communicator::begin_eager_round(LocalWindow& window, const OpSignature& op, const OpInfo& info,
                                     util::LazyDeadline& deadline) {
  window_wait_ = {&info, &deadline};
  WaitResult result =
      window.begin_eager(RoundStamp{op.pack(), info.seq, 0}, deadline, broken_check_);
  // Its wait is for the members still in an earlier eager call; the others may be anywhere.
  if (result.outcome != WaitOutcome::kArrived) fail_window_wait(window, result, info, false);
  if (const StampMismatch* late = window.eager_mismatch())
    fail_window_mismatch(window, *late, info);
}

void Communicator::wait_eager_round(LocalWindow& window, int member, const OpInfo& info,
                                    util::LazyDeadline& deadline) {
  window_wait_ = {&info, &deadline};
  WaitResult result = window.wait_eager(member, deadline, broken_check_);
  if (result.outcome != WaitOutcome::kArrived) fail_window_wait(window, result, info, false);
  if (const StampMismatch* found = window.eager_mismatch())
    fail_window_mismatch(window, *found, info);
}

void Communicator::report_window_wait() {
  const OpInfo* info = window_wait_.info;
  if (!info || board_.reported(info->seq)) return;
  if (std::chrono::steady_clock::now() >= report_point(window_wait_.deadline->get(), *info)) {
    board_.report_collective(info->name, info->seq,
                             report_until(window_wait_.deadline->get(), *info));
  }
}

bool Communicator::collectives_broken() const {
  util::MutexLock lock(mutex_);
  return broken_collectives_ != nullptr;
}

void Communicator::fail_window_mismatch(LocalWindow& window, const StampMismatch& mismatch,
                                        const OpInfo& info) {
  const RoundStamp& mine = mismatch.mine;
  const RoundStamp& theirs = mismatch.theirs;
  OpSignature my_op = OpSignature::unpack(mine.signature);
  std::string text;
  if (theirs.seq == mine.seq && theirs.signature == mine.signature) {
    text = "rank " + std::to_string(mismatch.member) + " cuts " + my_op.describe() + " into " +
           std::to_string(theirs.round_bytes) + "-byte rounds but rank " + std::to_string(rank_) +
           " into " + std::to_string(mine.round_bytes) +
           "-byte rounds: CollectiveOptions::segment_bytes differs between ranks";
  } else {
    text = "rank " + std::to_string(mismatch.member) + " called " +
           OpSignature::unpack(theirs.signature).describe() + " as collective #" +
           std::to_string(theirs.seq) + " but rank " + std::to_string(rank_) + " called " +
           my_op.describe() + " as collective #" + std::to_string(mine.seq);
  }
  auto error = std::make_shared<const Error>(ErrorCode::kMismatch, text, context_for(info));
  fail_window(window, error);
  throw *error;
}

void Communicator::fail_window_wait(LocalWindow& window, const WaitResult& result,
                                    const OpInfo& info, bool everyone_waited) {
  auto member_failure = [&](int member, const std::string& what) {
    OpInfo with_peer = info;
    with_peer.peer = member;
    return std::make_shared<const Error>(
        ErrorCode::kPeerFailure, describe_rank(member) + " " + what, context_for(with_peer));
  };
  auto member_list = [&](const std::vector<int>& members) {
    std::string text;
    for (int m : members) text += (text.empty() ? "" : ", ") + describe_rank(m);
    return text;
  };
  std::shared_ptr<const Error> error;
  switch (result.outcome) {
    case WaitOutcome::kArrived:
      error = std::make_shared<const Error>(ErrorCode::kInternal, "a finished wait was failed",
                                            context_for(info));
      break;
    case WaitOutcome::kTimeout:
      error = window_timeout(window, result, info, everyone_waited);
      break;
    case WaitOutcome::kMemberExited:
      error = member_failure(result.members.front(),
                             "exited during the collective: the process died or was killed");
      break;
    case WaitOutcome::kMemberLeft:
      error = member_failure(result.members.front(),
                             "destroyed the group (or shut down) without calling this collective");
      break;
    case WaitOutcome::kPoisoned: {
      std::string reason = window.poison_reason();
      ErrorCode code = window.poison_code();
      error = std::make_shared<const Error>(
          code == ErrorCode::kMismatch || code == ErrorCode::kPeerFailure ? code
                                                                          : ErrorCode::kAborted,
          (result.members.front() >= 0 ? member_list(result.members) : "a member") +
              " gave up this collective: " + reason,
          context_for(info));
      break;
    }
    case WaitOutcome::kInterrupted: {
      util::MutexLock lock(mutex_);
      error = broken_collectives_;
      break;
    }
  }
  fail_window(window, error);
  // The group's stored error, with this call's context.
  if (result.outcome == WaitOutcome::kInterrupted) check_collectives_usable(info);
  throw *error;
}

std::shared_ptr<const Error> Communicator::window_timeout(LocalWindow& window,
                                                          const WaitResult& result,
                                                          const OpInfo& info,
                                                          bool everyone_waited) {
  // The window knows exactly who had not arrived, and the last call each was seen in; the
  // board adds a point-to-point op one of them may be stuck in (a rank blocked in a recv while
  // the others are in a collective is a classic deadlock).
  std::vector<Sighting> seen(size());
  if (everyone_waited) {
    for (Sighting& s : seen) s = Sighting{true, info.seq, info.name};
  }
  seen[rank_] = Sighting{true, info.seq, info.name};
  std::vector<Sighting> board = read_board(
      result.members, util::deadline_after(ProgressBoard::report_after(timeout_of(info))));
  for (int m : result.members) {
    RoundStamp last = window.last_stamp(m);
    Sighting& s = seen[m];
    s = Sighting{true};
    if (last.seq >= 0 && last.seq < info.seq) {
      s.seq = last.seq;
      s.op = name_of(OpSignature::unpack(last.signature).kind);
    }
    s.waiting = board[m].waiting;
    // The board may know a later collective (one this window does not run, such as a large
    // one over the transport).
    if (board[m].seq > s.seq && board[m].seq < info.seq) {
      s.seq = board[m].seq;
      s.op = board[m].op;
    }
  }
  std::string text = std::string(info.name) + " #" + std::to_string(info.seq) +
                     " did not finish within its " + std::to_string(timeout_of(info).count()) +
                     " ms timeout: " + describe_stall(info.name, info.seq, seen, everyone_waited);
  OpInfo with_peer = info;
  if (result.members.size() == 1) with_peer.peer = result.members.front();
  return std::make_shared<const Error>(ErrorCode::kTimeout, text, context_for(with_peer));
}

void Communicator::fail_window_setup(const LocalWindowOptions& options, const OpInfo& info,
                                     const Error& cause) {
  std::vector<int> missing;
  try {
    missing = LocalWindow::members_missing_from_setup(options);
  } catch (const Error&) {
    // The store itself is failing: its error says more than a list could.
  }
  std::string text = std::string(info.name) + " #" + std::to_string(info.seq) +
                     " did not finish within its " + std::to_string(timeout_of(info).count()) +
                     " ms timeout (setting up the group's shared memory, at its first same-host "
                     "collective): ";
  if (missing.empty()) throw Error(ErrorCode::kTimeout, text + cause.message(), context_for(info));
  std::vector<Sighting> seen =
      read_board(missing, util::deadline_after(ProgressBoard::report_after(timeout_of(info))));
  for (int m = 0; m < size(); ++m) {
    if (std::find(missing.begin(), missing.end(), m) == missing.end()) {
      seen[m] = Sighting{true, info.seq, info.name};
      continue;
    }
    seen[m].known = true;  // the setup's keys tell: it never joined
    if (seen[m].seq >= info.seq) seen[m].seq = -1;
  }
  OpInfo with_peer = info;
  if (missing.size() == 1) with_peer.peer = missing.front();
  throw Error(ErrorCode::kTimeout, text + describe_stall(info.name, info.seq, seen),
              context_for(with_peer));
}

void Communicator::fail_window_record(LocalWindow& window, int member, const char* record,
                                      const std::string& fault, const OpInfo& info) {
  OpInfo with_peer = info;
  with_peer.peer = member;
  std::string text = describe_rank(member) + " published " + record +
                     " in the group's shared-memory window that no weft rank writes: " + fault;
  util::log_error(util::Subsys::kShm, [&] { return text; });
  auto error = std::make_shared<const Error>(ErrorCode::kPeerFailure, std::move(text),
                                             context_for(with_peer));
  fail_window(window, error);
  throw *error;
}

void Communicator::fail_window(LocalWindow& window, std::shared_ptr<const Error> error) {
  // Poisoned first, so that the members that wait in the window stop too.
  window.poison(error->code(), error->message());
  fail_collectives(std::move(error));
}

}  // namespace weft::core
