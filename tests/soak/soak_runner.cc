// The soak's main loop and its fault injection (soak_runner.h).
#include "soak_runner.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace weft::soak {
namespace {

// The fault's step and victim come from a stream of their own, so that a fault run draws the
// same steps as the run without a fault.
constexpr uint64_t kFaultStream = 0xfa017fa017ULL;
// More async ops in flight than this and the rank waits for them all.
constexpr std::size_t kMaxInFlight = 8;

const char* fault_name(Fault fault) {
  return fault == Fault::kKill ? "kill" : fault == Fault::kStop ? "stop" : "none";
}

// Whether `text` mentions "rank <rank>" as a whole number.
bool names_rank(const std::string& text, int rank) {
  const std::string needle = "rank " + std::to_string(rank);
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    const auto end = at + needle.size();
    if (end == text.size() || !std::isdigit(static_cast<unsigned char>(text[end]))) return true;
  }
  return false;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

SoakRunner::SoakRunner(const SoakConfig& config, std::shared_ptr<ProcessGroup> world)
    : config_(config),
      world_(std::move(world)),
      me_(world_->rank()),
      world_size_(world_->size()),
      shared_(config.seed),
      local_(mix64(config.seed) ^ static_cast<uint64_t>(world_->rank() + 1)),
      slots_(kGroupSlots) {
  if (config_.fault != Fault::kNone) {
    SoakRandom fault_random(mix64(config.seed ^ kFaultStream));
    const uint64_t steps = std::max<uint64_t>(config_.steps, 4);
    fault_at_ = steps / 4 + fault_random.below(steps / 2);
    victim_ = static_cast<int>(fault_random.below(static_cast<uint64_t>(world_->size())));
  }
}

// How many steps behind the victim a survivor may be when it hears of the fault.
constexpr uint64_t kFaultReach = 64;

std::string SoakRunner::prefix() const {
  return "seed=" + std::to_string(config_.seed) + " rank=" + std::to_string(me_) + "/" +
         std::to_string(world_size_);
}

int SoakRunner::run() {
  const auto started = std::chrono::steady_clock::now();
  try {
    run_steps();
  } catch (const Error& error) {
    // A survivor can be a few steps behind the victim when it dies (a non-root's part of a
    // reduce may still be on its way when the root moves on): an error of those steps that
    // names the victim is the fault's too.
    const bool near_fault =
        config_.fault != Fault::kNone && step_ + kFaultReach >= fault_at_ &&
        (names_rank(error.what(), victim_) || names_rank(error.root_cause().what(), victim_));
    if (step_ < fault_at_ && near_fault) fault_entered_ = std::chrono::steady_clock::now();
    return step_ >= fault_at_ || near_fault ? survivor_verdict(error) : unexpected_error(error);
  }
  if (config_.fault != Fault::kNone) {
    std::printf(
        "soak fault %s step=%llu victim=%d error=none: every step succeeded although rank "
        "%d was made to %s at step %llu\n",
        prefix().c_str(), static_cast<unsigned long long>(step_), victim_, victim_,
        fault_name(config_.fault), static_cast<unsigned long long>(fault_at_));
    return 1;
  }
  std::printf("soak ok %s steps=%llu ops=%llu bytes=%llu seconds=%.1f\n", prefix().c_str(),
              static_cast<unsigned long long>(config_.steps), static_cast<unsigned long long>(ops_),
              static_cast<unsigned long long>(bytes_), seconds_since(started));
  return 0;
}

void SoakRunner::run_steps() {
  current_ = "making the groups";
  make_groups();
  for (step_ = 0; step_ < config_.steps; ++step_) {
    Step step = draw_step(shared_, step_, world_->size(), kGroupSlots, config_.limits);
    if (step_ == fault_at_) {
      // Before the drain: a survivor may hear of the fault while draining.
      fault_entered_ = std::chrono::steady_clock::now();
      current_ = "draining before the fault";
      drain();
      if (me_ == victim_) inject_fault();
      step = fault_step_op(step_);
    }
    run_step(step);
  }
  current_ = "the final drain and barrier";
  drain();
  world_->barrier();
}

void SoakRunner::make_groups() {
  slots_[0].group = world_;
  slots_[0].members.clear();
  for (int r = 0; r < world_->size(); ++r) slots_[0].members.push_back(r);
  for (int slot = 1; slot < kGroupSlots; ++slot) make_group(shared_, *world_, slot, slots_[slot]);
  for (int slot = 0; slot < kGroupSlots; ++slot) {
    const auto& s = slots_[static_cast<std::size_t>(slot)];
    if (!s.group) continue;
    const int expected =
        static_cast<int>(std::find(s.members.begin(), s.members.end(), me_) - s.members.begin());
    if (s.group->rank() != expected || s.group->size() != static_cast<int>(s.members.size())) {
      Step none;
      none.index = step_;
      report_mismatch(none, s.describe(),
                      "group slot " + std::to_string(slot) + " gives this rank " +
                          std::to_string(s.group->rank()) + "/" + std::to_string(s.group->size()) +
                          ", the split/new_group definition " + std::to_string(expected) + "/" +
                          std::to_string(s.members.size()));
    }
  }
}

void SoakRunner::regroup() {
  drain();
  const int slot = static_cast<int>(1 + shared_.below(kGroupSlots - 1));
  make_group(shared_, *world_, slot, slots_[static_cast<std::size_t>(slot)]);
}

// Every survivor runs a blocking all_reduce over the world at the fault step: one op the victim
// never joins, whatever group the drawn step would have used.
Step SoakRunner::fault_step_op(uint64_t index) const {
  Step step;
  step.index = index;
  step.op = OpKind::kAllReduce;
  step.dtype = DType::kFloat32;
  step.count = 4096;
  step.slot = 0;
  step.in_place = true;
  return step;
}

void SoakRunner::inject_fault() {
  std::printf("soak injecting %s seed=%llu step=%llu rank=%d\n", fault_name(config_.fault),
              static_cast<unsigned long long>(config_.seed), static_cast<unsigned long long>(step_),
              me_);
  std::fflush(stdout);
  raise(config_.fault == Fault::kKill ? SIGKILL : SIGSTOP);
  // Continued after a stop by whoever cleans up: leave without touching the job again.
  std::_Exit(0);
}

void SoakRunner::run_step(const Step& step) {
  current_ = describe(step) + " on group slot " + std::to_string(step.slot);
  if (step.op == OpKind::kRegroup) return regroup();
  if (step.op == OpKind::kWaitSome) return wait_some();
  const GroupSlot& slot = slots_[static_cast<std::size_t>(step.slot)];
  if (!slot.group) return;
  const std::string group = slot.describe();
  current_ += " " + group;
  const OpContext context{config_.seed, &step, &slot.members, slot.group->rank()};
  auto op = make_op(context);
  if (!op) return;
  ++ops_;
  bytes_ += op->bytes();
  auto works = op->issue(*slot.group, step.async);
  if (works.empty()) {
    check_or_exit(*op, step, group);
    return;
  }
  in_flight_.push_back(InFlight{std::move(op), std::move(works), step, group});
  if (in_flight_.size() > kMaxInFlight) drain();
}

void SoakRunner::check_or_exit(const SoakOp& op, const Step& step, const std::string& group) const {
  if (auto wrong = op.check()) report_mismatch(step, group, *wrong);
}

void SoakRunner::wait_and_check(InFlight& entry) {
  current_ = "waiting for " + describe(entry.step) + " of step " +
             std::to_string(entry.step.index) + " on group " + entry.group;
  for (auto& work : entry.works) work->wait();
  check_or_exit(*entry.op, entry.step, entry.group);
}

// Waits for about half of the ops in flight, in an order of this rank's own.
void SoakRunner::wait_some() {
  std::vector<InFlight> kept;
  for (int i : local_.permutation(static_cast<int>(in_flight_.size()))) {
    auto& entry = in_flight_[static_cast<std::size_t>(i)];
    if (local_.percent(50)) {
      wait_and_check(entry);
    } else {
      kept.push_back(std::move(entry));
    }
  }
  in_flight_ = std::move(kept);
}

void SoakRunner::drain() {
  for (int i : local_.permutation(static_cast<int>(in_flight_.size()))) {
    wait_and_check(in_flight_[static_cast<std::size_t>(i)]);
  }
  in_flight_.clear();
}

void SoakRunner::report_mismatch(const Step& step, const std::string& group,
                                 const std::string& what) const {
  std::printf("soak MISMATCH %s step=%llu op=%s group=%s: %s\n", prefix().c_str(),
              static_cast<unsigned long long>(step.index), describe(step).c_str(), group.c_str(),
              what.c_str());
  std::fflush(stdout);
  // Ops of other groups may still be in flight over buffers a normal exit would free.
  std::_Exit(1);
}

int SoakRunner::unexpected_error(const Error& error) const {
  std::printf("soak error %s step=%llu during %s: %s\n", prefix().c_str(),
              static_cast<unsigned long long>(step_), current_.c_str(), error.what());
  std::fflush(stdout);
  std::_Exit(1);
}

// A survivor's error after the fault: the right kind, naming the victim, in time; then the
// groups must shut down in time too.
int SoakRunner::survivor_verdict(const Error& error) {
  const double failed_after = seconds_since(fault_entered_);
  const std::string text = error.what();
  const std::string root = error.root_cause().what();
  const ErrorCode code = error.code();
  const bool right_kind =
      code == ErrorCode::kPeerFailure || code == ErrorCode::kTimeout || code == ErrorCode::kAborted;
  const bool named = names_rank(text, victim_) || names_rank(root, victim_);
  for (auto& entry : in_flight_) {
    for (auto& work : entry.works) {
      try {
        work->wait(std::chrono::milliseconds(1));
      } catch (const Error&) {
      }
    }
  }
  in_flight_.clear();
  slots_.clear();
  world_.reset();
  const double ended_after = seconds_since(fault_entered_);
  const char* timeout_text = std::getenv("WEFT_TIMEOUT");
  const double timeout = timeout_text ? std::atof(timeout_text) : 300.0;
  const bool in_time = ended_after <= 2 * timeout;
  const bool good = right_kind && named && in_time;
  std::printf(
      "soak fault %s step=%llu victim=%d kind=%s error=%s failed_after=%.2fs "
      "ended_after=%.2fs%s%s%s: %s\n",
      prefix().c_str(), static_cast<unsigned long long>(fault_at_), victim_,
      fault_name(config_.fault), to_string(code), failed_after, ended_after,
      right_kind ? "" : " WRONG-KIND", named ? "" : " VICTIM-NOT-NAMED", in_time ? "" : " TOO-LATE",
      text.c_str());
  std::fflush(stdout);
  return good ? 0 : 1;
}

}  // namespace weft::soak
