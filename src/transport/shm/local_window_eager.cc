// LocalWindow's eager rings: calls small enough to ride in a cache line run ahead of the slowest
// reader, comparing stamps by hash (local_window.h, "Eager calls").

#include <algorithm>
#include <cstring>
#include <string>

#include "transport/shm/local_window_internal.h"
#include "weft/error.h"

namespace weft::transport {

using namespace window_internal;

namespace {

// How many eager calls ahead a writer takes its entry (the ring's half-wait keeps it free).
constexpr uint32_t kEagerPrefetchCalls = 8;
// A run of alike eager calls writes its full stamp again every so many calls: a stamp is then
// found within that many lines back, and still there unless its member ran most of the ring
// further (its description then names what the member runs now).
constexpr uint32_t kStampCheckpoint = 64;
static_assert(kStampCheckpoint < LocalWindow::kEagerDepth / 2);
// Pauses before a reader that found its writer's entry not yet published looks again: about
// one and a half of the writer's calls (a PAUSE lasts tens of nanoseconds on recent x86 cores).
constexpr int kEagerBackoffPauses = 6;

}  // namespace

LocalWindow::Arrival& LocalWindow::eager_line(int member, uint32_t call) const {
  return control(member).eager_stamps[call % kEagerDepth];
}

LocalWindow::EagerEntry& LocalWindow::eager_entry(int member, uint32_t call) const {
  return control(member).eager[call % kEagerDepth];
}

bool LocalWindow::read_eager_stamp(int member, uint32_t call, RoundStamp* stamp) const {
  // Back from `call` to the line of the run that holds it: a line whose round word says its own
  // call starts a run (or a checkpoint of one); an older call's line was not written since; a
  // later call's was reused, and may have held the run's start: then the stamp is lost. The
  // member may be reusing the line as we read (it marks that in the round word first, then
  // fences, then rewrites the stamp's words): a stamp counts only if the round word said its
  // call before and after the copy. The acquire fence keeps the words' loads before the second
  // look.
  for (uint32_t back = 0; back < kEagerDepth; ++back) {
    const uint32_t start = call - back;
    const Arrival& line = eager_line(member, start);
    const uint32_t round = line.round.load(std::memory_order_seq_cst);
    if (round == start) {
      RoundStamp run = line.stamp.load();
      std::atomic_thread_fence(std::memory_order_acquire);
      if (line.round.load(std::memory_order_relaxed) != start) return false;
      *stamp = run;
      stamp->seq += back;
      return true;
    }
    if (reached(round, start + 1)) return false;
  }
  return false;
}

StampMismatch LocalWindow::check_eager_stamps(uint32_t last) {
  uint32_t first = eager_checked_ + 1;
  if (!reached(last, first)) return StampMismatch{};
  uint32_t end = last + 1;  // every member published the calls before it (so far)
  // Member by member, call by call, the entries' hashes compared in place: a broadcast root
  // runs this for every call it makes. Only a difference is worth a closer look (the member
  // may be rewriting its entry, see the top of local_window.h); an entry already reused for a
  // later call is compared by its owner.
  const EagerEntry* mine = control(rank_).eager;
  for (int m = 0; m < members_; ++m) {
    if (m == rank_) continue;
    const Control& other = control(m);
    // A member that only read since `first` compared each of those calls with the entry it
    // read (a difference fails the group): once it published `last`, nothing of it is left to
    // compare, and its entries stay where they are (in a broadcast, half the lines that
    // crossed between cores per call were the root's comparisons of its readers' entries).
    if (reached(other.eager[last % kEagerDepth].round.load(std::memory_order_acquire), last) &&
        !reached(other.eager_written.load(std::memory_order_acquire), first)) {
      continue;
    }
    const EagerEntry* theirs = other.eager;
    for (uint32_t call = first; call != end; ++call) {
      uint32_t slot = call % kEagerDepth;
      if (eager_read_[slot]) continue;  // compared with its writer's stamp in the call
      uint32_t round = theirs[slot].round.load(std::memory_order_acquire);
      if (!reached(round, call)) {  // not published yet: compared at a later check
        end = call;
        break;
      }
      if (round == call && theirs[slot].stamp_hash.load(std::memory_order_relaxed) !=
                               mine[slot].stamp_hash.load(std::memory_order_relaxed)) {
        if (StampMismatch found = confirm_eager_mismatch(m, call); found.member >= 0) return found;
      }
    }
  }
  eager_checked_ = end - 1;
  return StampMismatch{};
}

StampMismatch LocalWindow::confirm_eager_mismatch(int member, uint32_t call) const {
  const EagerEntry& theirs = eager_entry(member, call);
  uint64_t hash = theirs.stamp_hash.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (theirs.round.load(std::memory_order_relaxed) != call ||
      hash == eager_entry(rank_, call).stamp_hash.load(std::memory_order_relaxed)) {
    return StampMismatch{};  // the member moved on: the hash read may be a later call's
  }
  RoundStamp mine;
  if (!read_eager_stamp(rank_, call, &mine)) mine = eager_line(rank_, call).stamp.load();
  return describe_eager_mismatch(member, call, mine);
}

StampMismatch LocalWindow::describe_eager_mismatch(int member, uint32_t call,
                                                   const RoundStamp& mine) const {
  // The full stamp of the call's run is published before the entry. It may be lost only if the
  // member has since run most of the ring further: then its latest call tells what it runs.
  StampMismatch found{member, mine, {}};
  if (!read_eager_stamp(member, call, &found.theirs) &&
      !read_latest_eager_stamp(member, &found.theirs)) {
    found.theirs = eager_line(member, call).stamp.load();
  }
  return found;
}

bool LocalWindow::read_latest_eager_stamp(int member, RoundStamp* stamp) const {
  uint32_t latest = 0;
  for (const EagerEntry& entry : control(member).eager) {
    uint32_t round = entry.round.load(std::memory_order_acquire);
    if (round != 0 && (latest == 0 || reached(round, latest))) latest = round;
  }
  return latest != 0 && read_eager_stamp(member, latest, stamp);
}

WaitResult LocalWindow::begin_eager(const RoundStamp& stamp, util::LazyDeadline& deadline,
                                    const std::function<bool()>& interrupted) {
  WaitResult result;
  eager_mismatch_.member = -1;
  uint32_t call = eager_ + 1;
  uint32_t reused = call - kEagerDepth;  // the call whose lines this one takes over
  // A member that only writes never waits for anyone unless its ring is full: a failure
  // elsewhere reaches it here.
  if (uint32_t poisoned = header().poisoned.load(std::memory_order_acquire)) {
    result.outcome = WaitOutcome::kPoisoned;
    result.members = {poisoner_of(poisoned, kPoisonBeingWritten, members_)};
    return result;
  }
  if (call > kEagerDepth && reached(reused, eager_checked_ + 1)) {
    if (eager_read_[call % kEagerDepth]) {
      // I read in that call and compared the stamp hash of the entry I read: nothing more to
      // compare, and nobody reads my entry of it but to compare stamps, which the reuse marker
      // below makes safe.
      eager_checked_ = reused;
    } else {
      // I only wrote: every member must be done with my entry before I reuse it. Waiting until
      // they are done with half the ring, not just this entry, spares the next half-ring of
      // calls the wait: a writer that outruns its readers would otherwise wait at every call,
      // each time for an entry that a reader is about to write, and both would pay for it.
      uint32_t freed = call - kEagerDepth / 2;
      auto entry_round = [&](int m) -> std::atomic<uint32_t>& {
        return eager_entry(m, freed).round;
      };
      if (!wait_for_everyone(entry_round, freed, deadline, interrupted, &result)) return result;
      // Compared in batches (a comparison reads an entry its owner wrote, a cache miss, and
      // misses in a row overlap), before my entry of call `reused` is marked as being reused
      // (see the top of the file), and up to `freed`, which every member has published: then
      // members that only read need no look at their entries.
      if (StampMismatch found = check_eager_stamps(freed); found.member >= 0) {
        eager_mismatch_ = found;
        return result;
      }
    }
  }
  eager_ = call;
  // A call whose stamp follows from the last one's (the same operation, the next seq) needs no
  // line of its own (see the top of local_window.h), but at every checkpoint.
  eager_run_starts_ = call % kStampCheckpoint == 1 || stamp.seq != eager_stamp_.seq + 1 ||
                      stamp.round_bytes != eager_stamp_.round_bytes ||
                      !(stamp.signature == eager_stamp_.signature);
  eager_stamp_ = stamp;
  // Consecutive eager calls are mostly the same operation: hash its signature once.
  if (!(stamp.signature == hashed_signature_)) {
    hashed_signature_ = stamp.signature;
    signature_hash_ = signature_hash(stamp.signature);
  }
  eager_hash_ = eager_stamp_hash(signature_hash_, stamp);
  prefetch_for_writing(&eager_entry(rank_, call + kEagerPrefetchCalls));
  eager_read_[call % kEagerDepth] = false;
  // Release orders the comparisons above before it (see the top of the file); the fence keeps
  // the stamps and data written later from being seen before the marks.
  eager_entry(rank_, call).round.store(call - 1, std::memory_order_release);
  if (eager_run_starts_) eager_line(rank_, call).round.store(call - 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  return result;
}

uint8_t* LocalWindow::my_eager_data() { return eager_entry(rank_, eager_).data; }

WaitResult LocalWindow::wait_eager(int member, util::LazyDeadline& deadline,
                                   const std::function<bool()>& interrupted) {
  WaitResult result;
  EagerEntry& entry = eager_entry(member, eager_);
  auto published = [&] { return reached(entry.round.load(std::memory_order_acquire), eager_); };
  // Caught up with the writer: look again only after a while. Each look takes the line the
  // writer is filling (its next entry shares it) away from it, so a reader that polls right
  // behind a writer slows it down, and both stay in that lockstep at the pace of a line
  // transfer; the pause lets the writer pull ahead again.
  if (!published()) {
    for (int i = 0; i < kEagerBackoffPauses; ++i) util::cpu_relax();
  }
  if (!spin_until(published) &&
      !wait_for(member, entry.round, eager_, deadline, interrupted, &result)) {
    if (result.outcome == WaitOutcome::kTimeout) result.members = {member};
    return result;
  }
  if (entry.stamp_hash.load(std::memory_order_relaxed) != eager_hash_) {
    eager_mismatch_ = describe_eager_mismatch(member, eager_, eager_stamp_);
  }
  eager_read_[eager_ % kEagerDepth] = true;
  // No prefetch of the writer's next line: in calls back to back the reader mostly runs right
  // behind its writer, and in calls with work between them it waits for each entry, so that
  // line is usually not written yet. Taken early, the writer has to take it back before it
  // writes, and the reader fetches it again after: two more transfers for that line.
  return result;
}

const uint8_t* LocalWindow::eager_data(int member) const {
  return eager_entry(member, eager_).data;
}

void LocalWindow::end_eager() {
  Control& mine = control(rank_);
  if (eager_run_starts_) {
    Arrival& line = eager_line(rank_, eager_);
    line.stamp.store(eager_stamp_);
    line.round.store(eager_, std::memory_order_release);
  }
  if (!eager_read_[eager_ % kEagerDepth])
    mine.eager_written.store(eager_, std::memory_order_relaxed);
  EagerEntry& entry = eager_entry(rank_, eager_);
  entry.stamp_hash.store(eager_hash_, std::memory_order_relaxed);
  publish(entry.round, eager_);
}

}  // namespace weft::transport
