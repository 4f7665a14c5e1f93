#include "transport/shm/local_window.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <type_traits>
#include <utility>

#include "transport/shm/cross_memory.h"
#include "transport/shm/local_window_internal.h"
#include "transport/shm/window_records.h"
#include "util/futex.h"
#include "util/log.h"
#include "util/remote_barrier.h"
#include "weft/error.h"

namespace weft::transport {

using namespace window_internal;

namespace {

// Bounds of the adaptive spin (microseconds). When members outnumber the cores, a waiter's
// spin yields the core to the member it waits for, and a futex sleep costs a wake-up on top of
// the scheduler's delay, so the spin starts (and may grow) much longer.
constexpr int64_t kMinSpinUs = 5;
constexpr int64_t kMaxSpinUs = 1000;
constexpr int64_t kInitialSpinUs = 100;
constexpr int64_t kMaxOversubscribedSpinUs = 20'000;
constexpr int64_t kInitialOversubscribedSpinUs = 5'000;

}  // namespace

LocalWindow::LocalWindow(SharedSegment segment, int rank, int members, std::size_t slot_bytes,
                         int64_t spin_us, bool member_reads, SlotStores slot_stores)
    : segment_(std::move(segment)),
      rank_(rank),
      members_(members),
      slot_bytes_(slot_bytes),
      controls_offset_(round_up(sizeof(Header), kPage)),
      slots_offset_(controls_offset_ + round_up(members * sizeof(Control), kPage)),
      signature_hash_(signature_hash(hashed_signature_)),
      member_reads_allowed_(member_reads),
      spin_(spin_us >= 0 ? util::AdaptiveSpin(spin_us)
                         : util::AdaptiveSpin(kInitialSpinUs, kMinSpinUs, kMaxSpinUs)),
      slot_stores_(header().streamed_classes, rank == 0, slot_stores) {}

void LocalWindow::choose_spin() {
  // Count the cores of all members together: a launcher that binds each rank to its own core
  // gives every member one core, yet no member waits for a core.
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int m = 0; m < members_; ++m) CPU_OR(&all, &all, &control(m).cores);
  outnumbered_ = members_ > std::max(1, CPU_COUNT(&all));
  if (outnumbered_) spin_.bound(kInitialOversubscribedSpinUs, kMinSpinUs, kMaxOversubscribedSpinUs);
}

void LocalWindow::choose_publishing() {
  // A sleeper's remote barrier interrupts the core of every member: worth it only while sleeps
  // are rare, that is while every member has a core of its own.
  bool everyone = true;
  for (int m = 0; m < members_; ++m) everyone = everyone && control(m).remote_barriers;
  sleepers_fence_ = everyone && !outnumbered_;
}

void LocalWindow::publish(std::atomic<uint32_t>& word, uint32_t value) {
  const std::atomic<uint32_t>& sleepers = control(rank_).sleepers;
  if (sleepers_fence_) {
    // A member going to sleep on the word runs a barrier on my core between counting itself
    // in `sleepers` and its last look at the word (announce_sleep): either it sees the value
    // or I see it counted. Spares every publish the full fence of a sequentially consistent
    // store, which every small call pays while sleeps are rare.
    word.store(value, std::memory_order_release);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_relaxed) == 0) return;
  } else {
    // The store and the load must not pass each other (the sleeper does the mirror image).
    word.store(value, std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_seq_cst) == 0) return;
  }
  util::futex_wake_all_shared(word);
}

void LocalWindow::announce_sleep(int member) {
  control(member).sleepers.fetch_add(1, std::memory_order_seq_cst);
  // Should the barrier fail (it cannot once registered), a missed wake-up costs one check
  // interval, not a hang.
  if (sleepers_fence_) util::remote_barrier();
}

LocalWindow::~LocalWindow() {
  Control& mine = control(rank_);
  mine.departed.store(1, std::memory_order_seq_cst);
  for (Arrival& arrival : mine.arrivals) util::futex_wake_all_shared(arrival.round);
}

LocalWindow::Header& LocalWindow::header() const { return *static_cast<Header*>(segment_.base()); }

LocalWindow::Control& LocalWindow::control(int member) const {
  auto* base = static_cast<uint8_t*>(segment_.base()) + controls_offset_;
  return reinterpret_cast<Control*>(base)[member];
}

std::atomic<uint32_t>& LocalWindow::arrival_of(int member, uint32_t round) const {
  return control(member).arrivals[round & 1].round;
}

uint8_t* LocalWindow::slot_of(int member, uint32_t round) const {
  auto* base = static_cast<uint8_t*>(segment_.base()) + slots_offset_;
  return base + (static_cast<std::size_t>(member) * 2 + (round & 1)) * slot_bytes_;
}

uint8_t* LocalWindow::my_slot() { return slot_of(rank_, round_ + 1); }

uint8_t* LocalWindow::my_slot(std::size_t bytes) {
  if (bytes > kInlineBytes) return my_slot();
  return staged_;
}

const uint8_t* LocalWindow::slot(int member) const { return slot_of(member, round_); }

const uint8_t* LocalWindow::slot(int member, std::size_t bytes) const {
  if (bytes > kInlineBytes) return slot(member);
  return control(member).arrivals[round_ & 1].data;
}

void LocalWindow::arrive(const RoundStamp& stamp) {
  uint32_t round = round_ + 1;
  Control& mine = control(rank_);
  Arrival& arrival = mine.arrivals[round & 1];
  std::memcpy(arrival.data, staged_, kInlineBytes);
  arrival.stamp.store(stamp);
  publish(arrival.round, round);
}

WaitResult LocalWindow::wait_all(util::LazyDeadline& deadline,
                                 const std::function<bool()>& interrupted) {
  uint32_t round = round_ + 1;
  WaitResult result;
  auto arrival = [&](int m) -> std::atomic<uint32_t>& { return arrival_of(m, round); };
  if (wait_for_everyone(arrival, round, deadline, interrupted, &result)) {
    round_ = round;
    // Everyone arrived here, so everyone finished reading the round before: my line of the
    // next round's parity is free. Taking it now moves the invalidation of the others' copies
    // off the next round's path (their next look at it comes after their own work).
    prefetch_for_writing(&control(rank_).arrivals[(round + 1) & 1]);
  }
  return result;
}

bool LocalWindow::wait_for(int member, std::atomic<uint32_t>& word, uint32_t round,
                           util::LazyDeadline& deadline, const std::function<bool()>& interrupted,
                           WaitResult* result) {
  Control& theirs = control(member);
  auto arrived = [&] { return reached(word.load(std::memory_order_acquire), round); };
  if (arrived()) return true;
  auto started = std::chrono::steady_clock::now();
  for (;;) {
    if (arrived()) {
      spin_.after_sleep(std::chrono::steady_clock::now() - started);
      return true;
    }
    uint32_t poisoned = header().poisoned.load(std::memory_order_acquire);
    if (poisoned) {
      result->outcome = WaitOutcome::kPoisoned;
      result->members = {poisoner_of(poisoned, kPoisonBeingWritten, members_)};
      return false;
    }
    if (interrupted && interrupted()) {
      result->outcome = WaitOutcome::kInterrupted;
      return false;
    }
    if (theirs.departed.load(std::memory_order_acquire) && !arrived()) {
      result->outcome = WaitOutcome::kMemberLeft;
      result->members = {member};
      return false;
    }
    if (watches_[member].exited()) {
      result->outcome = WaitOutcome::kMemberExited;
      result->members = {member};
      return false;
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline.get()) {
      result->outcome = WaitOutcome::kTimeout;
      return false;
    }
    announce_sleep(member);
    uint32_t seen = word.load(std::memory_order_seq_cst);
    if (!reached(seen, round)) {
      util::futex_wait_shared(word, seen, std::min(deadline.get(), now + kCheckInterval));
    }
    theirs.sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
}

bool LocalWindow::can_read_members() {
  if (member_reads_probed_ < 0) {
    bool all = member_reads_allowed_;
    for (int m = 0; all && m < members_; ++m) {
      if (m == rank_) continue;
      const Control& theirs = control(m);
      int error = probe_process_memory(pids_[m], theirs.probe_address, theirs.probe_word);
      if (error != 0) {
        all = false;
        util::log_info(util::Subsys::kShm, [&] {
          return "no cross-memory reads from rank " + std::to_string(m) + " (" +
                 std::strerror(error) + "): same-host all_to_all copies through the window";
        });
      }
    }
    member_reads_probed_ = all ? 1 : 0;
  }
  return member_reads_probed_ == 1;
}

int LocalWindow::read_member(int member, uint64_t address, void* local, std::size_t bytes) const {
  return read_process_memory(pids_[member], address, local, bytes);
}

bool LocalWindow::stamps_may_differ() const {
  if (eager_checked_ != eager_) return true;
  const RoundStamp mine = control(rank_).arrivals[round_ & 1].stamp.load();
  for (int m = 0; m < members_; ++m) {
    if (!(control(m).arrivals[round_ & 1].stamp.load() == mine)) return true;
  }
  return false;
}

StampMismatch LocalWindow::find_other_stamp() {
  StampMismatch found;
  found.mine = control(rank_).arrivals[round_ & 1].stamp.load();
  for (int m = 0; m < members_; ++m) {
    const RoundStamp stamp = control(m).arrivals[round_ & 1].stamp.load();
    if (!(stamp == found.mine)) {
      found.member = m;
      found.theirs = stamp;
      return found;
    }
  }
  // Every member finished the eager calls before this round; some may already be reusing
  // their lines (they skip the comparison, and compare on their side, see the top of the file).
  return check_eager_stamps(eager_);
}

void LocalWindow::poison(ErrorCode code, const std::string& reason) {
  uint32_t expected = 0;
  Header& h = header();
  // Only the first failure writes its reason; later ones are usually its consequences.
  if (h.poisoned.load(std::memory_order_acquire) == 0) {
    std::string text = "rank " + std::to_string(rank_) + ": " + reason;
    std::size_t n = std::min(text.size(), kReasonBytes - 1);
    char staged[kReasonBytes] = {};
    std::memcpy(staged, text.data(), n);
    if (h.poisoned.compare_exchange_strong(expected,
                                           static_cast<uint32_t>(rank_ + 1) | kPoisonBeingWritten,
                                           std::memory_order_acq_rel)) {
      std::memcpy(h.reason, staged, kReasonBytes);
      h.code = static_cast<uint32_t>(code);
      h.poisoned.store(static_cast<uint32_t>(rank_ + 1), std::memory_order_release);
    }
  }
  for (int m = 0; m < members_; ++m) {
    for (Arrival& arrival : control(m).arrivals) util::futex_wake_all_shared(arrival.round);
  }
}

RoundStamp LocalWindow::last_stamp(int member) const {
  RoundStamp last;
  auto consider = [&](const Arrival& arrival) {
    if (arrival.round.load(std::memory_order_acquire) == 0) return;
    RoundStamp stamp = arrival.stamp.load();
    if (stamp.seq > last.seq) last = stamp;
  };
  const Control& theirs = control(member);
  for (const Arrival& arrival : theirs.arrivals) consider(arrival);
  RoundStamp eager;
  if (read_latest_eager_stamp(member, &eager) && eager.seq > last.seq) last = eager;
  return last;
}

uint32_t LocalWindow::written_poison() const {
  const auto give_up = std::chrono::steady_clock::now() + kPoisonWriteWait;
  uint32_t poisoned = header().poisoned.load(std::memory_order_acquire);
  while ((poisoned & kPoisonBeingWritten) && std::chrono::steady_clock::now() < give_up) {
    util::yield_core();
    poisoned = header().poisoned.load(std::memory_order_acquire);
  }
  return poisoned;
}

ErrorCode LocalWindow::poison_code() const {
  uint32_t poisoned = written_poison();
  if (poisoned == 0 || (poisoned & kPoisonBeingWritten)) return ErrorCode::kAborted;
  return static_cast<ErrorCode>(header().code);
}

std::string LocalWindow::poison_reason() const {
  uint32_t poisoned = written_poison();
  if (poisoned == 0) return "";
  if (poisoned & kPoisonBeingWritten) return "(its reason was still being written)";
  return std::string(header().reason, strnlen(header().reason, kReasonBytes));
}

}  // namespace weft::transport
