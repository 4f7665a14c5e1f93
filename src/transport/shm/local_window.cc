#include "transport/shm/local_window.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <thread>
#include <type_traits>
#include <utility>

#include "transport/shm/cross_memory.h"
#include "transport/shm/window_records.h"
#include "util/futex.h"
#include "util/log.h"
#include "util/random_token.h"
#include "util/remote_barrier.h"
#include "weft/error.h"

namespace weft::transport {

namespace {

constexpr uint32_t kMagic = 0x574d4853;  // "SHMW"
constexpr std::size_t kPage = 4096;
constexpr std::size_t kReasonBytes = 1024;
// Set in Header::poisoned while the first poisoner writes its reason and code.
constexpr uint32_t kPoisonBeingWritten = 0x80000000u;
// How long a member that saw the poison waits for its reason to be written (the writer stores it
// between two stores of Header::poisoned, but may be descheduled between them).
constexpr auto kPoisonWriteWait = std::chrono::milliseconds(200);
// A sleeping waiter wakes this often to look for exits, aborts and poison.
constexpr auto kCheckInterval = std::chrono::milliseconds(10);
// The setup looks at the store after a pause that doubles from the first to the longest (each
// look is a request to the store's server: not every 10 ms from every rank of a large job).
constexpr auto kFirstSetupPause = std::chrono::microseconds(20);
constexpr auto kSetupCheckInterval = std::chrono::microseconds(100'000);
// Bounds of the adaptive spin (microseconds). When members outnumber the cores, a waiter's
// spin yields the core to the member it waits for, and a futex sleep costs a wake-up on top of
// the scheduler's delay, so the spin starts (and may grow) much longer.
constexpr int64_t kMinSpinUs = 5;
constexpr int64_t kMaxSpinUs = 1000;
constexpr int64_t kInitialSpinUs = 100;
constexpr int64_t kMaxOversubscribedSpinUs = 20'000;
constexpr int64_t kInitialOversubscribedSpinUs = 5'000;
// A spin that pauses between checks reads the clock only this often (a clock read costs about
// as much as the check and the pause together).
constexpr int kChecksPerClockRead = 32;

// The cores this process may run on (all online ones when the affinity is unknown).
cpu_set_t own_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    CPU_ZERO(&set);
    for (long c = 0; c < std::min<long>(sysconf(_SC_NPROCESSORS_ONLN), CPU_SETSIZE); ++c) {
      CPU_SET(c, &set);
    }
  }
  return set;
}

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// Round numbers wrap; compare them as a window of 2^31.
bool reached(uint32_t have, uint32_t want) { return static_cast<int32_t>(have - want) >= 0; }

std::chrono::milliseconds time_left(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::milliseconds(1));
}

// Takes a line that other cores hold for writing ahead of time: the write that follows finds it
// exclusive instead of waiting for the others' copies to be invalidated.
void prefetch_for_writing(const void* line) {
#if defined(__x86_64__)
  // PREFETCHW; a CPU without it (Intel before Broadwell) runs it as a NOP.
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(line)));
#else
  __builtin_prefetch(line, 1);
#endif
}

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

// A signature in one word: with the seq and round size mixed in (eager_stamp_hash), the stamp
// that the eager entries carry (see the top of local_window.h).
uint64_t signature_hash(const Signature& signature) {
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
uint64_t eager_stamp_hash(uint64_t signature_hash, const RoundStamp& stamp) {
  return signature_hash ^ (static_cast<uint64_t>(stamp.seq) * 0x9e3779b97f4a7c15u) ^
         (stamp.round_bytes * 0xc2b2ae3d27d4eb4fu);
}

}  // namespace

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

struct LocalWindow::Header {
  uint32_t magic;
  uint32_t members;
  uint64_t slot_bytes;
  char nonce[33];  // also in the store's value: a stale value cannot pass for this segment
  std::atomic<uint32_t> poisoned;  // 0, or 1 + the rank that poisoned it first
  uint32_t code;                   // its ErrorCode
  char reason[kReasonBytes];
  // SlotStorePolicy's choices by kind of call, written by member 0 now and then and read at every
  // slot fill: a line of their own, apart from the words every eager call reads.
  alignas(64) std::atomic<uint32_t> streamed_classes[SlotStorePolicies::kKinds];
};

// What a member publishes for the rounds of one parity, in one cache line: the others learn
// of its arrival, its stamp and (small rounds) its data with a single line transfer.
struct alignas(64) LocalWindow::Arrival {
  std::atomic<uint32_t> round;  // the last round of this parity the member reached
  StampWords stamp;
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

namespace {

// Waits until the store has `keys`, looking at it with a growing pause rather than blocking in
// it, so that a failure of the group meanwhile ends the wait (a member that failed may never
// come). Not with timed waits: a torch store's client is left unusable by a wait that timed out.
void wait_for_keys(Store& store, const std::vector<std::string>& keys,
                   const LocalWindowOptions& options) {
  auto pause = kFirstSetupPause;
  while (!store.check(keys)) {
    if (options.interrupted && options.interrupted()) {
      throw Error(ErrorCode::kAborted,
                  "the group failed while its shared-memory window was set up");
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= options.deadline) {
      store.wait(keys, time_left(options.deadline));  // its timeout, naming what it waited for
      return;
    }
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(pause, options.deadline - now));
    pause = std::min<std::chrono::microseconds>(pause * 2, kSetupCheckInterval);
  }
}

}  // namespace

std::unique_ptr<LocalWindow> LocalWindow::open(const LocalWindowOptions& options) {
  std::size_t slot_bytes = round_up(std::max<std::size_t>(options.slot_bytes, kPage), kPage);
  std::size_t total = round_up(sizeof(Header), kPage) +
                      round_up(options.members * sizeof(Control), kPage) +
                      static_cast<std::size_t>(options.members) * 2 * slot_bytes;
  Store& store = *options.store;
  const std::string segment_key = options.key_prefix + "segment";
  std::string problem;
  SharedSegment segment;
  // Before any wait: a member that times out below names the ones that never came.
  store.set(options.key_prefix + "joined/" + std::to_string(options.rank), {});

  if (options.rank == 0) {
    try {
      segment = SharedSegment::create("weft-" + options.group_name, total);
      auto* header = new (segment.base()) Header{};
      header->magic = kMagic;
      header->members = static_cast<uint32_t>(options.members);
      header->slot_bytes = slot_bytes;
      std::string nonce = util::random_hex(16);
      std::memcpy(header->nonce, nonce.c_str(), nonce.size() + 1);
      for (int m = 0; m < options.members; ++m) {
        new (static_cast<uint8_t*>(segment.base()) + round_up(sizeof(Header), kPage) +
             m * sizeof(Control)) Control{};
      }
      store.set(segment_key,
                to_bytes(std::to_string(getpid()) + " " + std::to_string(segment.fd()) + " " +
                         std::to_string(total) + " " + header->nonce));
    } catch (const Error& e) {
      problem = e.message();
      store.set(segment_key, to_bytes("!" + problem));
    }
  } else {
    wait_for_keys(store, {segment_key}, options);
    std::string value = to_string(store.get(segment_key));
    if (!value.empty() && value[0] == '!') {
      problem = "rank 0 could not make the segment: " + value.substr(1);
    } else {
      long pid = 0, fd = -1;
      std::size_t bytes = 0;
      std::string nonce;
      std::istringstream(value) >> pid >> fd >> bytes >> nonce;
      try {
        if (bytes != total) {
          throw Error(ErrorCode::kInternal, "segment of " + std::to_string(bytes) +
                                                " bytes, expected " + std::to_string(total));
        }
        segment = SharedSegment::attach(static_cast<pid_t>(pid), static_cast<int>(fd), total);
        const Header& header = *static_cast<const Header*>(segment.base());
        if (RecordFault fault = check_window_header(header.magic, kMagic, header.members,
                                                    static_cast<uint32_t>(options.members),
                                                    header.slot_bytes, slot_bytes)) {
          throw Error(ErrorCode::kInternal,
                      "the segment does not describe this group: " + fault.to_string());
        }
        if (nonce != std::string(header.nonce, strnlen(header.nonce, sizeof header.nonce))) {
          throw Error(ErrorCode::kInternal, "the segment does not describe this group");
        }
      } catch (const Error& e) {
        problem = e.message();
      }
    }
  }

  std::unique_ptr<LocalWindow> window;
  if (problem.empty()) {
    window.reset(new LocalWindow(std::move(segment), options.rank, options.members, slot_bytes,
                                 options.spin_us, options.member_reads, options.slot_stores));
    Control& mine = window->control(options.rank);
    mine.pid = static_cast<int32_t>(getpid());
    mine.probe_word = static_cast<uint64_t>(mine.pid);
    mine.probe_address = reinterpret_cast<uintptr_t>(&mine.probe_word);
    mine.cores = own_cores();
    mine.remote_barriers = util::enable_remote_barriers();
  }
  // Every member says whether it is in; everybody uses the window only if all are.
  store.set(options.key_prefix + "ready/" + std::to_string(options.rank),
            to_bytes(problem.empty() ? "ok" : problem));
  std::vector<std::string> keys;
  for (int m = 0; m < options.members; ++m) {
    keys.push_back(options.key_prefix + "ready/" + std::to_string(m));
  }
  wait_for_keys(store, keys, options);
  std::vector<Bytes> answers = store.multi_get(keys);
  for (int m = 0; m < options.members; ++m) {
    std::string answer = to_string(answers[m]);
    if (answer != "ok") {
      util::log_info(util::Subsys::kShm, [&] {
        return "group '" + options.group_name + "': no shared memory (rank " + std::to_string(m) +
               ": " + answer + "); same-host collectives use TCP";
      });
      return nullptr;
    }
  }
  // Everyone has mapped it: the owner's descriptor has done its job.
  window->segment_.close_fd();
  for (int m = 0; m < options.members; ++m) {
    const int32_t pid = window->control(m).pid;  // read once: what is checked is what is watched
    if (RecordFault fault = check_member_pid(pid); fault && m != options.rank) {
      std::string text = "rank " + std::to_string(m) +
                         " published a control block in the group's shared-memory window that "
                         "no weft rank writes: " +
                         fault.to_string();
      window->poison(ErrorCode::kPeerFailure, text);
      throw Error(ErrorCode::kPeerFailure, text);
    }
    window->watches_.emplace_back(m == options.rank ? 0 : pid);
    window->pids_.push_back(pid);
  }
  window->choose_spin();
  window->choose_publishing();
  util::log_info(util::Subsys::kShm, [&] {
    return "group '" + options.group_name + "': shared-memory window, " +
           std::to_string(options.members) + " members, " + std::to_string(slot_bytes >> 10) +
           " KiB slots";
  });
  return window;
}

std::vector<int> LocalWindow::members_missing_from_setup(const LocalWindowOptions& options) {
  std::vector<int> missing;
  for (int m = 0; m < options.members; ++m) {
    if (!options.store->check({options.key_prefix + "joined/" + std::to_string(m)})) {
      missing.push_back(m);
    }
  }
  return missing;
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

template <typename WordOf>
bool LocalWindow::wait_for_everyone(const WordOf& word_of, uint32_t round,
                                    util::LazyDeadline& deadline,
                                    const std::function<bool()>& interrupted, WaitResult* result) {
  auto reached_by = [&](int m) {
    return m == rank_ || reached(word_of(m).load(std::memory_order_acquire), round);
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
      for (int i = 0; i < kChecksPerClockRead; ++i) {
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
