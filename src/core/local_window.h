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
// fixes it. A member that exits (pidfd), a deadline, a poisoned window (some member failed and said
// so) or the caller's `interrupted` check (the group was aborted) ends a wait with a reason
// instead. A member that destroys its group marks itself departed: a member waiting for it then
// learns at once that it will not come. Nothing outlives the processes: the segment is a memfd (see
// SharedSegment).
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
#include "weft/error.h"
#include "weft/store.h"

namespace weft::core {

struct LocalWindowOptions {
  Store* store = nullptr;
  std::string key_prefix;  // the group's own keys in the store
  std::string group_name;
  int rank = 0;
  int members = 1;
  std::size_t slot_bytes = 1u << 20;
  std::chrono::steady_clock::time_point deadline;
  int64_t spin_us = -1;  // < 0: adaptive
  // Whether members may copy straight out of each other's memory (WEFT_SHM_SINGLE_COPY).
  bool member_reads = true;
};

enum class WaitOutcome { kArrived, kTimeout, kMemberExited, kMemberLeft, kPoisoned, kInterrupted };

struct WaitResult {
  WaitOutcome outcome = WaitOutcome::kArrived;
  std::vector<int> members;  // who exited, failed, or had not arrived
};

// What a member publishes with its arrival: the call it runs and how it cuts it into rounds
// (members that cut one call differently would read each other's slots wrongly).
struct RoundStamp {
  transport::Signature signature;
  int64_t seq = -1;
  uint64_t round_bytes = 0;
  bool operator==(const RoundStamp&) const = default;
};

class LocalWindow {
 public:
  // Collective over the members (each calls it at the same collective). Returns null on every
  // member when any of them cannot map the segment (all agree through the store), after
  // logging why. Throws kTimeout when a member never comes.
  static std::unique_ptr<LocalWindow> open(const LocalWindowOptions& options);
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
  WaitResult wait_all(std::chrono::steady_clock::time_point deadline,
                      const std::function<bool()>& interrupted);
  const uint8_t* slot(int member) const;
  const uint8_t* slot(int member, std::size_t bytes) const;
  // A member that published another stamp than mine in the round just completed; -1 if none.
  int find_other_stamp(RoundStamp* theirs) const;

  // Whether this member may copy straight out of every other member's memory
  // (process_vm_readv): allowed by the options and by the kernel (Yama, seccomp), which the
  // first call probes once. Members may get different answers: algorithms agree in a round
  // before any member relies on it.
  bool can_read_members();
  // Copies `bytes` at `address` (in `member`'s address space, e.g. a buffer address it published
  // in a round) to `local`. Returns 0 or the errno (ESRCH: gone; EFAULT: not mapped there).
  int read_member(int member, uint64_t address, void* local, std::size_t bytes) const;

  // Tells every member that this one failed (their waits end with kPoisoned), why, and with
  // which error code, so that the root cause travels (a death stays a peer failure).
  void poison(ErrorCode code, const std::string& reason);
  // "rank N: reason" and the code of the first member that poisoned the window.
  std::string poison_reason() const;
  ErrorCode poison_code() const;

 private:
  struct Header;
  struct Arrival;
  struct Control;

  LocalWindow(transport::SharedSegment segment, int rank, int members, std::size_t slot_bytes,
              int64_t spin_us, bool member_reads);
  Header& header() const;
  Control& control(int member) const;
  uint8_t* slot_of(int member, uint32_t round) const;
  // The word that says whether `member` reached `round`.
  std::atomic<uint32_t>& arrival_of(int member, uint32_t round) const;
  // Waits for one member; false when the wait ended for another reason (result filled in).
  bool wait_for(int member, uint32_t round, std::chrono::steady_clock::time_point deadline,
                const std::function<bool()>& interrupted, WaitResult* result);
  void adapt_spin(std::chrono::steady_clock::duration slept);

  transport::SharedSegment segment_;
  int rank_;
  int members_;
  std::size_t slot_bytes_;
  std::size_t controls_offset_;
  std::size_t slots_offset_;
  std::vector<transport::ProcessWatch> watches_;
  uint32_t round_ = 0;  // the last round every member reached
  // Spins until every member reached `round` or the spin ends; true when all did.
  bool spin_for_all(uint32_t round);

  // Once every member published its cores: whether members outnumber them, and the spin.
  void choose_spin();

  bool member_reads_allowed_;
  int member_reads_probed_ = -1;  // -1: not yet; else 0 or 1

  bool fixed_spin_;
  bool outnumbered_ = false;  // more members than cores: spin by yielding, never by pausing
  int64_t max_spin_us_ = 0;
  int64_t spin_us_;
};

}  // namespace weft::core
