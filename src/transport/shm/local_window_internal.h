// What the files of LocalWindow share (local_window.cc: spin, rounds, stamps, poison;
// local_window_setup.cc: opening the segment; local_window_eager.cc: the eager rings): the
// segment's layout, the stamp hashes its entries carry, and small helpers. Private to them;
// they bring it in with a using-directive, so they are compiled outside unity batches.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>

#include "transport/shm/local_window.h"
#include "transport/shm/window_records.h"
#include "util/futex.h"

namespace weft::transport::window_internal {

inline constexpr uint32_t kMagic = 0x574d4853;  // "SHMW"
inline constexpr std::size_t kPage = 4096;
inline constexpr std::size_t kReasonBytes = 1024;
// Set in Header::poisoned while the first poisoner writes its reason and code.
inline constexpr uint32_t kPoisonBeingWritten = 0x80000000u;
// How long a member that saw the poison waits for its reason to be written (the writer stores it
// between two stores of Header::poisoned, but may be descheduled between them).
inline constexpr auto kPoisonWriteWait = std::chrono::milliseconds(200);
// A spin that pauses between checks reads the clock only this often (a clock read costs about
// as much as the check and the pause together).
inline constexpr int kChecksPerClockRead = 32;
// A sleeping waiter wakes this often to look for exits, aborts and poison.
inline constexpr auto kCheckInterval = std::chrono::milliseconds(10);

inline std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// Round numbers wrap; compare them as a window of 2^31.
inline bool reached(uint32_t have, uint32_t want) { return static_cast<int32_t>(have - want) >= 0; }

// Takes a line that other cores hold for writing ahead of time: the write that follows finds it
// exclusive instead of waiting for the others' copies to be invalidated.
inline void prefetch_for_writing(const void* line) {
#if defined(__x86_64__)
  // PREFETCHW; a CPU without it (Intel before Broadwell) runs it as a NOP.
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(line)));
#else
  __builtin_prefetch(line, 1);
#endif
}

// A signature in one word: with the seq and round size mixed in (eager_stamp_hash), the stamp
// that the eager entries carry (see the top of local_window.h).
inline uint64_t signature_hash(const Signature& signature) {
  static_assert(sizeof(Signature) % sizeof(uint64_t) == 0 &&
                    std::has_unique_object_representations_v<Signature>,
                "a signature hashes as whole words, without padding");
  uint64_t words[sizeof(Signature) / sizeof(uint64_t)];
  std::memcpy(words, &signature, sizeof words);
  uint64_t hash = 0x243f6a8885a308d3u;
  for (uint64_t word : words) {
    hash = (hash ^ word) * 0x9e3779b97f4a7c15u;
    hash ^= hash >> 29;
  }
  return hash;
}

// Odd multipliers are bijections: two stamps with one signature and different seqs (or round
// sizes) never share a hash; different signatures do with a chance of 2^-64.
inline uint64_t eager_stamp_hash(uint64_t signature_hash, const RoundStamp& stamp) {
  return signature_hash ^ (static_cast<uint64_t>(stamp.seq) * 0x9e3779b97f4a7c15u) ^
         (stamp.round_bytes * 0xc2b2ae3d27d4eb4fu);
}

// A RoundStamp held as words with relaxed atomic accesses: a member may read another's stamp
// while that member rewrites it (an eager stamp, discarded when the round word moved, see the top
// of local_window.h; any stamp, for an error message, in last_stamp); as a plain struct that read
// would be a data race. On x86-64 each access is a plain 8-byte move. Outside the anonymous
// namespace: LocalWindow::Arrival, a member of a class with linkage, holds one.
struct StampWords {
  static_assert(std::is_trivially_copyable_v<RoundStamp> &&
                    sizeof(RoundStamp) % sizeof(uint64_t) == 0 &&
                    std::has_unique_object_representations_v<RoundStamp>,
                "a stamp travels as whole words, without padding");
  static_assert(std::atomic<uint64_t>::is_always_lock_free,
                "other processes share these words: they must not hide a lock");
  static constexpr std::size_t kWords = sizeof(RoundStamp) / sizeof(uint64_t);

  StampWords() { store(RoundStamp{}); }

  void store(const RoundStamp& stamp) { store(stamp, std::make_index_sequence<kWords>{}); }
  RoundStamp load() const { return load(std::make_index_sequence<kWords>{}); }

  // Word by word, unrolled, each word taken straight from the stamp: a loop over a copy of the
  // stamp makes that copy on the stack first.
  template <std::size_t... I>
  void store(const RoundStamp& stamp, std::index_sequence<I...>) {
    (words[I].store(word(stamp, I), std::memory_order_relaxed), ...);
  }
  static uint64_t word(const RoundStamp& stamp, std::size_t i) {
    uint64_t value;
    std::memcpy(&value, reinterpret_cast<const unsigned char*>(&stamp) + i * sizeof value,
                sizeof value);
    return value;
  }
  template <std::size_t... I>
  RoundStamp load(std::index_sequence<I...>) const {
    uint64_t copy[kWords] = {words[I].load(std::memory_order_relaxed)...};
    RoundStamp stamp;
    std::memcpy(static_cast<void*>(&stamp), copy, sizeof copy);
    return stamp;
  }

  std::atomic<uint64_t> words[kWords];
};
static_assert(sizeof(StampWords) == sizeof(RoundStamp) &&
                  alignof(StampWords) == alignof(RoundStamp),
              "a stamp's words take the place a plain stamp took");

}  // namespace weft::transport::window_internal

namespace weft::transport {

struct LocalWindow::Header {
  uint32_t magic;
  uint32_t members;
  uint64_t slot_bytes;
  char nonce[33];  // also in the store's value: a stale value cannot pass for this segment
  std::atomic<uint32_t> poisoned;  // 0, or 1 + the rank that poisoned it first
  uint32_t code;                   // its ErrorCode
  char reason[window_internal::kReasonBytes];
  // SlotStorePolicy's choices by kind of call, written by member 0 now and then and read at every
  // slot fill: a line of their own, apart from the words every eager call reads.
  alignas(64) std::atomic<uint32_t> streamed_classes[SlotStorePolicies::kKinds];
};

// What a member publishes for the rounds of one parity, in one cache line: the others learn
// of its arrival, its stamp and (small rounds) its data with a single line transfer.
struct alignas(64) LocalWindow::Arrival {
  std::atomic<uint32_t> round;  // the last round of this parity the member reached
  window_internal::StampWords stamp;
  alignas(16) uint8_t data[kInlineBytes];
};

// What a member publishes in an eager call, several calls to a cache line: a reader that
// follows a writer, and a writer that compares its readers' stamps, move one line for every
// kEntriesPerLine calls.
struct alignas(32) LocalWindow::EagerEntry {
  // The last eager call of this entry the member finished; n - 1 while it rewrites it for n.
  std::atomic<uint32_t> round;
  std::atomic<uint64_t> stamp_hash;  // of its stamp for that call (relaxed accesses)
  alignas(16) uint8_t data[kEagerBytes];
};

struct alignas(64) LocalWindow::Control {
  static_assert(sizeof(Arrival) == 64, "an arrival is one cache line");
  static_assert(sizeof(EagerEntry) * kEntriesPerLine == 64, "entries fill their cache lines");
  Arrival arrivals[2];  // by round parity
  // By eager call number modulo kEagerDepth: the entries, and the full stamps, which only
  // describe a mismatch that the entries' hashes showed (round word and stamp; no data).
  EagerEntry eager[kEagerDepth];
  Arrival eager_stamps[kEagerDepth];
  // The last eager call in which the member did not read (it wrote). The calls after it it
  // read, and so compared with their writers: the comparisons skip them (a line of its own:
  // a broadcast root writes it at every call, the others read it once per half-ring).
  alignas(64) std::atomic<uint32_t> eager_written;
  // Waiters sleeping on one of the arrivals' round words (its own line: the arriving member
  // reads it every round, the others write it only when they go to sleep).
  alignas(64) std::atomic<uint32_t> sleepers;
  std::atomic<uint32_t> departed;  // the member destroyed its group
  int32_t pid;
  // A word with known contents (the pid) and where the member's own mapping holds it: the
  // others read it from the member's address space to learn whether they may
  // (can_read_members).
  uint64_t probe_word;
  uint64_t probe_address;
  cpu_set_t cores;           // where the member may run (written once, before the window is used)
  uint32_t remote_barriers;  // whether its process takes part in remote barriers (same)
};

// The waits of rounds and eager calls alike (templates: each caller's test inlines).

template <typename WordOf>
bool LocalWindow::wait_for_everyone(const WordOf& word_of, uint32_t round,
                                    util::LazyDeadline& deadline,
                                    const std::function<bool()>& interrupted, WaitResult* result) {
  auto reached_by = [&](int m) {
    return m == rank_ ||
           window_internal::reached(word_of(m).load(std::memory_order_acquire), round);
  };
  // One spin over every member, not one per member: a spin that restarts for each member would
  // pause again each time, and with members outnumbering cores every pause is time the member
  // we wait for could have run.
  int next = 0;  // members below it have arrived
  bool everyone = spin_until([&] {
    while (next < members_ && reached_by(next)) ++next;
    return next == members_;
  });
  for (int m = 0; !everyone && m < members_; ++m) {
    if (m != rank_ && !wait_for(m, word_of(m), round, deadline, interrupted, result)) {
      if (result->outcome == WaitOutcome::kTimeout) {
        for (int other = 0; other < members_; ++other) {
          if (!reached_by(other)) result->members.push_back(other);
        }
      }
      return false;
    }
  }
  return true;
}

template <typename Ready>
bool LocalWindow::spin_until(const Ready& ready) {
  if (ready()) return true;
  const int64_t spin_us = spin_.spin_us();
  if (spin_us <= 0) return false;
  if (!outnumbered_) {
    // Every member has a core of its own: yielding gives the core to nobody we wait for, and a
    // sched_yield (a system call) costs about as much as a whole small round. Pause between
    // checks; read the clock now and then,
    // and not at all in the many waits that end within the first checks.
    std::chrono::steady_clock::time_point until{};
    for (;;) {
      for (int i = 0; i < window_internal::kChecksPerClockRead; ++i) {
        util::cpu_relax();
        if (ready()) return true;
      }
      auto now = std::chrono::steady_clock::now();
      if (until == std::chrono::steady_clock::time_point{}) {
        until = now + std::chrono::microseconds(spin_us);
      } else if (now >= until) {
        return false;
      }
    }
  }
  auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  do {
    util::yield_core();
    if (ready()) return true;
  } while (std::chrono::steady_clock::now() < until);
  return false;
}

}  // namespace weft::transport
