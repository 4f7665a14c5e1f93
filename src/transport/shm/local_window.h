// LocalWindow — a group's shared memory on one host, and the round protocol that same-host
// collective algorithms use to exchange data through it.
//
// Layout (one memfd segment per group, made by group rank 0 at the group's first same-host
// collective): a header, one control block per member (per round parity, one cache line with
// the round it has reached, the signature and sequence number of the operation it runs and up
// to kInlineBytes of a small round's data; its pid) and two data slots per member
// ("parities"), each slot_bytes long.
//
// Round protocol. The members step through numbered rounds together:
//   1. write into my_slot() (my slot of this round's parity) — never into anyone else's;
//   2. arrive(): publish that I reached the round, with the operation I am running;
//   3. wait_all(): wait until every member reached it;
//   4. read any member's slot(m) of this round, until I arrive at the next round.
// Why a slot is never overwritten while someone reads it: a member writes parity r%2 again
// only in round r+2, which it starts after every member arrived at round r+1, and a member
// arrives at r+1 only after it finished reading round r.
//
// Waiting spins (pausing between checks, or yielding the core when the members outnumber the
// cores they may run on together), then sleeps on a futex in the member's control block (the
// round word of the parity it waits for); the spin adapts to how waits ended unless WEFT_SPIN_US
// fixes it. A publisher wakes only when a sleeper counted itself in its control block; while
// every member has a core of its own, a member going to sleep runs a remote barrier
// (util/remote_barrier.h) between counting itself and its last look, so that publishing needs
// no fence of its own (else both sides fence). A member that exits (pidfd), a deadline, a poisoned
// window (some member failed and said so) or the caller's `interrupted` check (the group was
// aborted) ends a wait with a reason instead. A member that destroys its group marks itself
// departed: a member waiting for it then learns at once that it will not come. Nothing outlives the
// processes: the segment is a memfd (see SharedSegment).
//
// Eager rounds: a rooted call of at most kEagerBytes (broadcast, reduce) in which the members
// that only write do not wait for the ones that read. Each member has two rings of kEagerDepth
// places, one per eager call, numbered by a counter that every member advances at its eager
// calls: entries (round word, a 64-bit hash of the stamp, data), two to a cache line, which
// the members read, and lines with the full stamp, read only to describe a mismatch: written
// only where a run of calls starts whose stamps follow from it (the same operation, the seq
// one more each call), and every kStampCheckpoint calls, so that a loop of alike calls writes
// no more than its entries. Every line that crosses between cores costs, more so when the host
// puts the two vCPUs far apart (docs/PERFORMANCE.md, "Two modes"); so a reader that follows a
// writer moves one line per two calls, and nobody reads a member's entries while it only reads
// (below). In eager call n a member
//   1. begin_eager(): if it only wrote in call n - kEagerDepth, whose entry call n reuses, and
//      its last comparison did not cover that call, waits until every member has finished call
//      n - kEagerDepth / 2 (half the ring, so that the next calls need no wait) and compares
//      their stamp hashes of the calls up to that one since the last comparison with its own
//      (in a batch: each is a cache miss, and misses in a row overlap);
//   2. writes its data into its entry (a writer), or waits for the writer's entry of call n
//      and checks its stamp hash (a reader: a mismatch is caught at once, on the reader);
//   3. end_eager(): publishes its full stamp (where a run starts), then (a writer) the call in
//      its eager_written word, then its hash and round n in its entry — after it finished
//      reading.
// A reader needs no further comparison of that call: it compared with the entry it read, and
// any other member either read the same entry or is a writer, which compares with every member
// that wrote (a chain of readers ends at a writer). So a comparison skips a member whose
// eager_written says it only read in the calls compared, once it published the last of them.
// A broadcast root runs up to kEagerDepth calls ahead of its slowest reader, and a member that
// only writes learns of a mismatch or a failure late: when its entry comes round again, at the
// next standard round (which compares the eager calls since the last comparison), or when a
// member's failure poisons the window. While a member rewrites an entry and its stamp line,
// their round words say n - 1 (done with n - kEagerDepth, not yet n), and a hash or stamp
// counts only if the round word said its call before and after the read, so a comparison never
// reads half of a new one (stamps and hashes are words read and written with relaxed atomic
// accesses: a read that overlaps a rewrite is discarded, not undefined). Of two writers that
// compare each other's entry of one call while about to reuse their own, at least one sees the
// other's intact: each compares before it marks its own entry (acquire loads, release store).
// Two different stamps share a hash with a chance of 2^-64 (the same operation with another
// seq: never).
// Thread-safety: one operation at a time per window (a group's collectives are serialised).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transport/frame_header.h"
#include "transport/shm/process_watch.h"
#include "transport/shm/shared_segment.h"
#include "transport/shm/slot_store_policy.h"
#include "util/adaptive_spin.h"
#include "util/deadline.h"
#include "weft/error.h"
#include "weft/store.h"

namespace weft::transport {

struct LocalWindowOptions {
  Store* store = nullptr;
  std::string key_prefix;  // the group's own keys in the store
  std::string group_name;
  int rank = 0;
  int members = 1;
  std::size_t slot_bytes = 1u << 20;
  std::chrono::steady_clock::time_point deadline;
  // Asked while the setup waits for the other members: true ends it with kAborted (the group
  // failed meanwhile, and a member may never come).
  std::function<bool()> interrupted;
  int64_t spin_us = -1;  // < 0: adaptive
  // Whether members may copy straight out of each other's memory (WEFT_SHM_SINGLE_COPY).
  bool member_reads = true;
  // How members write their slots (WEFT_SHM_SLOT_STORES; see SlotStorePolicy).
  SlotStores slot_stores = SlotStores::kAdaptive;
};

enum class WaitOutcome { kArrived, kTimeout, kMemberExited, kMemberLeft, kPoisoned, kInterrupted };

struct WaitResult {
  WaitOutcome outcome = WaitOutcome::kArrived;
  std::vector<int> members;  // who exited, failed, or had not arrived
};

// What a member publishes with its arrival: the call it runs and how it cuts it into rounds
// (members that cut one call differently would read each other's slots wrongly).
struct RoundStamp {
  Signature signature;
  int64_t seq = -1;
  uint64_t round_bytes = 0;
  bool operator==(const RoundStamp&) const = default;
};

// Two members that published different stamps for one call.
struct StampMismatch {
  int member = -1;  // the other member; -1 when none was found
  RoundStamp mine, theirs;
};

class LocalWindow {
 public:
  // Collective over the members (each calls it at the same collective). Returns null on every
  // member when any of them cannot map the segment (all agree through the store), after
  // logging why. Throws kTimeout when a member never comes, kAborted when options.interrupted
  // said so first.
  static std::unique_ptr<LocalWindow> open(const LocalWindowOptions& options);
  // After open() timed out: the members that never joined the setup (each says so in the store
  // first thing), in ascending order.
  static std::vector<int> members_missing_from_setup(const LocalWindowOptions& options);
  ~LocalWindow();

  int rank() const { return rank_; }
  int members() const { return members_; }
  std::size_t slot_bytes() const { return slot_bytes_; }

  // Whether the members outnumber the cores they may run on together (the same answer on every
  // member): then every round needs each member scheduled in turn, and costs far more.
  bool members_outnumber_cores() const { return outnumbered_; }

  // Rounds of at most this many bytes may travel inside the line that publishes the arrival.
  static constexpr std::size_t kInlineBytes = 16;

  uint8_t* my_slot();
  // My slot for a round that carries `bytes` bytes: up to kInlineBytes, the data rides in the
  // cache line that publishes my arrival (one line transfer instead of two). Every member must
  // pass the same `bytes` to my_slot and slot (derive it from what the stamp compares).
  uint8_t* my_slot(std::size_t bytes);
  void arrive(const RoundStamp& stamp);
  WaitResult wait_all(util::LazyDeadline& deadline, const std::function<bool()>& interrupted);
  const uint8_t* slot(int member) const;
  const uint8_t* slot(int member, std::size_t bytes) const;
  // Whether a slot piece of `piece_bytes` of a call of kind `kind` (the caller's numbering,
  // below kCallKinds) is written with streaming stores now (SlotStorePolicies).
  static constexpr int kCallKinds = SlotStorePolicies::kKinds;
  bool streams_slot_pieces(int kind, std::size_t piece_bytes) const {
    return slot_stores_.streams(kind, piece_bytes);
  }
  // One call's timing for the slot stores' choice of its kind (counts on member 0 only): the slot
  // piece that chose its kind of store, whether it streamed, the bytes filled, how long it took.
  void record_slot_fill(int kind, std::size_t piece_bytes, bool streamed, std::size_t filled_bytes,
                        std::chrono::nanoseconds took, std::chrono::steady_clock::time_point now) {
    slot_stores_.record(kind, piece_bytes, streamed, filled_bytes, took, now);
  }
  // A member that published another stamp than mine in the round just completed, or in one of
  // the eager calls made since the round before it (those only their writers have checked).
  StampMismatch find_other_stamp();
  // False when find_other_stamp() would surely find none: every member's stamp of the round
  // equals mine (compared in place) and no eager call awaits comparison. The common case of
  // every round, without building a StampMismatch.
  bool stamps_may_differ() const;

  // --- eager rounds (see the top of this file) ---
  static constexpr std::size_t kEagerBytes = 16;
  static constexpr uint32_t kEagerDepth = 256;
  // Step 1 of an eager call stamped `stamp`; the result says why a wait ended otherwise. After
  // it, eager_mismatch() names a member whose stamp of an earlier eager call, compared when my
  // ring came round, differed from mine (the caller fails the group).
  WaitResult begin_eager(const RoundStamp& stamp, util::LazyDeadline& deadline,
                         const std::function<bool()>& interrupted);
  // My line's data for this eager call (a writer fills it before end_eager).
  uint8_t* my_eager_data();
  // Waits until `member` published this eager call. After it, eager_mismatch() says whether
  // the member stamped the call otherwise than I did.
  WaitResult wait_eager(int member, util::LazyDeadline& deadline,
                        const std::function<bool()>& interrupted);
  // The mismatch the last begin_eager or wait_eager found, or null. Kept in the window, not
  // returned: building an empty one (two stamps) on every call would cost a small broadcast
  // more than the rest of its eager path.
  const StampMismatch* eager_mismatch() const {
    return eager_mismatch_.member >= 0 ? &eager_mismatch_ : nullptr;
  }
  // `member`'s data of this eager call (after wait_eager).
  const uint8_t* eager_data(int member) const;
  void end_eager();

  // Whether this member may copy straight out of every other member's memory
  // (process_vm_readv): allowed by the options and by the kernel (Yama, seccomp), which the
  // first call probes once. Members may get different answers: algorithms agree in a round
  // before any member relies on it.
  bool can_read_members();
  // Copies `bytes` at `address` (in `member`'s address space, e.g. a buffer address it published
  // in a round) to `local`. Returns 0 or the errno (ESRCH: gone; EFAULT: not mapped there).
  int read_member(int member, uint64_t address, void* local, std::size_t bytes) const;

  // The stamp of the last call `member` was seen in (its latest round or eager call); seq -1
  // when none. For error messages: read without synchronising with the member.
  RoundStamp last_stamp(int member) const;

  // Tells every member that this one failed (their waits end with kPoisoned), why, and with
  // which error code, so that the root cause travels (a death stays a peer failure).
  void poison(ErrorCode code, const std::string& reason);
  // "rank N: reason" and the code of the first member that poisoned the window.
  // Both wait (briefly) for a reason still being written: a waiter may see the poison first.
  std::string poison_reason() const;
  ErrorCode poison_code() const;

 private:
  // Header::poisoned once its writer has finished (or kPoisonWriteWait passed).
  uint32_t written_poison() const;
  struct Header;
  struct Arrival;
  struct EagerEntry;
  struct Control;
  static constexpr uint32_t kEntriesPerLine = 2;  // eager entries in a cache line

  LocalWindow(SharedSegment segment, int rank, int members, std::size_t slot_bytes, int64_t spin_us,
              bool member_reads, SlotStores slot_stores);
  Header& header() const;
  Control& control(int member) const;
  uint8_t* slot_of(int member, uint32_t round) const;
  // The word that says whether `member` reached `round`.
  std::atomic<uint32_t>& arrival_of(int member, uint32_t round) const;
  // Waits until `word` of `member` reaches `round`; false when the wait ended for another
  // reason (result filled in).
  bool wait_for(int member, std::atomic<uint32_t>& word, uint32_t round,
                util::LazyDeadline& deadline, const std::function<bool()>& interrupted,
                WaitResult* result);
  // Waits until word_of(m) of every other member m reaches `round`: one spin over all, then a
  // wait for each. False when the wait ended for another reason (result filled in; a timeout
  // names every member that had not reached it).
  template <typename WordOf>
  bool wait_for_everyone(const WordOf& word_of, uint32_t round, util::LazyDeadline& deadline,
                         const std::function<bool()>& interrupted, WaitResult* result);
  Arrival& eager_line(int member, uint32_t call) const;
  EagerEntry& eager_entry(int member, uint32_t call) const;
  // Spins until ready() or the spin ends; true when ready.
  template <typename Ready>
  bool spin_until(const Ready& ready);
  // The stamp `member` ran eager call `call` with, from the stamp of the run of calls that
  // holds it (see begin_eager), if the member's lines still hold that run's.
  bool read_eager_stamp(int member, uint32_t call, RoundStamp* stamp) const;
  // The stamp of `member`'s last published eager call (the latest its entries' round words
  // name), if its lines still hold that call's run.
  bool read_latest_eager_stamp(int member, RoundStamp* stamp) const;
  // Compares every member's stamps of the eager calls after the last one checked, up to
  // `last` or the first call that a member has not published yet.
  StampMismatch check_eager_stamps(uint32_t last);
  // `member` and its stamp of eager call `call` beside mine, if its entry still has that call
  // and another hash than mine (else member is -1). Out of line: the comparisons' loop stays
  // tight.
  [[gnu::noinline]] StampMismatch confirm_eager_mismatch(int member, uint32_t call) const;
  // `member`, its full stamp of eager call `call` and `mine`, for an error message.
  StampMismatch describe_eager_mismatch(int member, uint32_t call, const RoundStamp& mine) const;
  // Whether publishing may skip the full fence (sleepers_fence_): every member takes part in
  // remote barriers and has a core of its own. The same answer on every member.
  void choose_publishing();
  // Stores `value` (a round I reached) in my `word` and wakes the members sleeping on it.
  void publish(std::atomic<uint32_t>& word, uint32_t value);
  // Counts me among the sleepers of `member`, before my last look at the word I sleep on.
  void announce_sleep(int member);

  SharedSegment segment_;
  int rank_;
  int members_;
  std::size_t slot_bytes_;
  std::size_t controls_offset_;
  std::size_t slots_offset_;
  std::vector<ProcessWatch> watches_;
  std::vector<int32_t> pids_;  // by member, as checked at open (single-copy reads go there)
  uint32_t round_ = 0;         // the last round every member reached
  // A small round's data until I arrive: written into my arrival line together with the stamp
  // and the round word, not earlier, so that a member polling that line takes it from me once
  // per round, not twice (a line transfer is most of a small round's cost).
  // Eager calls gained nothing from it: their writer usually runs calls ahead of its readers.
  alignas(16) uint8_t staged_[kInlineBytes] = {};
  uint32_t eager_ = 0;                 // my eager calls so far (the current one while it runs)
  uint32_t eager_checked_ = 0;         // every member's stamps agree up to this eager call
  bool eager_read_[kEagerDepth] = {};  // by call: whether I read (and compared) a line in it
  RoundStamp eager_stamp_;             // the current eager call's
  bool eager_run_starts_ = false;      // whether it starts a run of stamps (begin_eager)
  uint64_t eager_hash_ = 0;            // and its hash (eager_stamp_hash)
  Signature hashed_signature_;         // the last eager call's signature
  uint64_t signature_hash_ = 0;        // and its hash (signature_hash)
  StampMismatch eager_mismatch_;       // see eager_mismatch()

  // Once every member published its cores: whether members outnumber them, and the spin.
  void choose_spin();

  bool member_reads_allowed_;
  int member_reads_probed_ = -1;  // -1: not yet; else 0 or 1

  bool outnumbered_ = false;  // more members than cores: spin by yielding, never by pausing
  // Members about to sleep run a remote barrier, so publishing needs no fence (publish()).
  bool sleepers_fence_ = false;
  // Spin before a futex sleep: 100 us to 1 ms, 5 to 20 ms when outnumbered (see choose_spin).
  util::AdaptiveSpin spin_;

  SlotStorePolicies slot_stores_;
};

}  // namespace weft::transport
