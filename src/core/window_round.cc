// Communicator's side of the shared-memory window: making it at the group's first same-host
// collective, and one round of its protocol with failures turned into this group's errors.
#include <cstdio>

#include "core/communicator.h"
#include "util/settings.h"

namespace weft::core {

LocalWindow* Communicator::local_window(std::chrono::steady_clock::time_point deadline) {
  // Once open, the window stays until the group dies: no lock on every collective's path.
  if (LocalWindow* open = open_window_.load(std::memory_order_acquire)) return open;
  std::lock_guard lock(window_mutex_);
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
  options.spin_us = world_->configured_spin_us();
  options.member_reads = util::setting_choice("WEFT_SHM_SINGLE_COPY") != "off";
  const std::string stores = util::setting_choice("WEFT_SHM_SLOT_STORES");
  options.slot_stores = stores == "ordinary"    ? SlotStores::kOrdinary
                        : stores == "streaming" ? SlotStores::kStreaming
                                                : SlotStores::kAdaptive;
  window_ = LocalWindow::open(options);
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
  WaitResult result = window.wait_all(deadline, broken_check_);
  if (result.outcome != WaitOutcome::kArrived) fail_window_wait(window, result, info);
  if (!window.stamps_may_differ()) return;
  StampMismatch mismatch = window.find_other_stamp();
  if (mismatch.member >= 0) fail_window_mismatch(window, mismatch, info);
}

void Communicator::begin_eager_round(LocalWindow& window, const OpSignature& op, const OpInfo& info,
                                     util::LazyDeadline& deadline) {
  WaitResult result =
      window.begin_eager(RoundStamp{op.pack(), info.seq, 0}, deadline, broken_check_);
  if (result.outcome != WaitOutcome::kArrived) fail_window_wait(window, result, info);
  if (const StampMismatch* late = window.eager_mismatch())
    fail_window_mismatch(window, *late, info);
}

void Communicator::wait_eager_round(LocalWindow& window, int member, const OpInfo& info,
                                    util::LazyDeadline& deadline) {
  WaitResult result = window.wait_eager(member, deadline, broken_check_);
  if (result.outcome != WaitOutcome::kArrived) fail_window_wait(window, result, info);
  if (const StampMismatch* found = window.eager_mismatch())
    fail_window_mismatch(window, *found, info);
}

bool Communicator::collectives_broken() const {
  std::lock_guard lock(mutex_);
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
                                    const OpInfo& info) {
  auto member_failure = [&](int member, const std::string& what) {
    OpInfo with_peer = info;
    with_peer.peer = member;
    return std::make_shared<const Error>(ErrorCode::kPeerFailure,
                                         "rank " + std::to_string(member) + " " + what,
                                         context_for(with_peer));
  };
  auto member_list = [](const std::vector<int>& members) {
    std::string text;
    for (int m : members) text += (text.empty() ? "" : ", ") + std::to_string(m);
    return text;
  };
  std::shared_ptr<const Error> error;
  switch (result.outcome) {
    case WaitOutcome::kArrived:
      error = std::make_shared<const Error>(ErrorCode::kInternal, "a finished wait was failed",
                                            context_for(info));
      break;
    case WaitOutcome::kTimeout: {
      auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(timeout_).count();
      error = std::make_shared<const Error>(
          ErrorCode::kTimeout,
          "rank(s) " + member_list(result.members) + " did not reach this collective within the " +
              "deadline (" + std::to_string(waited) + " ms timeout): stuck, slow, or calling " +
              "another collective",
          context_for(info));
      break;
    }
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
          "rank " + member_list(result.members) + " gave up this collective: " + reason,
          context_for(info));
      break;
    }
    case WaitOutcome::kInterrupted: {
      std::lock_guard lock(mutex_);
      error = broken_collectives_;
      break;
    }
  }
  fail_window(window, error);
  // The group's stored error, with this call's context.
  if (result.outcome == WaitOutcome::kInterrupted) check_collectives_usable(info);
  throw *error;
}

void Communicator::fail_window(LocalWindow& window, std::shared_ptr<const Error> error) {
  // Poisoned first, so that the members that wait in the window stop too.
  window.poison(error->code(), error->message());
  fail_collectives(std::move(error));
}

}  // namespace weft::core
