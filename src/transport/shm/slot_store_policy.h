// SlotStorePolicy — whether members write their window slots with ordinary or streaming
// (non-temporal) stores, learned while the group runs.
//
// Why it must be learned: the cost of a cache line moving between two cores depends on where
// the cores are, and a virtual machine's vCPUs can be moved by the host while a job runs.
// While the writer and the reader share a cache (a core complex), ordinary stores win: the
// reader takes the written lines straight from the writer's cache. While they do not, a line
// transfer costs several times more, a write to a slot line must first invalidate the reader's
// copy of it, and streaming stores, which send the data to memory, win. No one setting is good
// in both, and which one holds can change within a run (docs/perf-history.md has the figures).
//
// So the window's leader (member 0) times its calls by the size of the slot pieces it writes,
// in size classes, and publishes per class which kind is faster in a word of the window that
// every member reads before it fills a slot. Now and then it tries the other kind for a few
// calls: less often while its choice keeps holding; at least every kRetryAfter (longer when
// calls are long, so that trials stay a small share of the time); and at once when the chosen
// kind's calls turn kDriftFactor slower than when it was last confirmed (the vCPUs moved). It
// compares the median times of the last calls of each kind (when members outnumber
// cores, the scheduler delays some calls by far more than the kinds differ; a mean followed
// those). Times are per byte filled, so that calls of different sizes in one class compare. A
// member that reads the word a call late only writes its slot the slower way once: the choice
// never changes what is written, so the members need not agree on it.
//
// Each op learns apart (SlotStorePolicies): their calls fill and read the slots in different
// patterns, and the faster kind can differ between them at the same size and placement (a
// broadcast, whose root alone writes, against an all_reduce, where every member writes). A
// shared choice was also thrown about by a job alternating ops, whose times per byte differ by
// several times.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace weft::transport {

enum class SlotStores { kAdaptive, kOrdinary, kStreaming };

class SlotStorePolicy {
 public:
  // Pieces below this many bytes are always written with ordinary stores: too few lines for
  // the kind of store to matter against the round's fixed cost.
  static constexpr std::size_t kFromBytes = 4096;
  static constexpr int kClasses = 16;  // 4 KiB, 8 KiB, ... 128 MiB and up
  // The calls of a trial of the other kind (the first is not counted: it pays for the switch).
  static constexpr uint32_t kTrialCalls = 8;
  // Long calls decide with fewer: a kind's sample spans about kSampleSpan of calls, at least
  // kFewestSamples of them. A fixed count of eight made calls of many milliseconds follow a
  // move of the vCPUs only after about as many calls as a short job makes in all; three such
  // calls still span several of the scheduler's slices.
  static constexpr uint32_t kFewestSamples = 3;
  static constexpr std::chrono::milliseconds kSampleSpan{20};
  // Calls between trials: from kFirstPeriod, doubled each time a trial confirms the choice.
  static constexpr uint32_t kFirstPeriod = 32;
  static constexpr uint32_t kLongestPeriod = 1024;
  static constexpr std::chrono::milliseconds kRetryAfter{200};
  // The other kind must be this much faster to be chosen (timings are noisy).
  static constexpr double kSwitchMargin = 0.9;
  // Trials take at most about 1/kTrialShare of the time: calls of many milliseconds stretch
  // the retry interval (a trial's calls may take twice as long as the chosen kind's).
  static constexpr int kTrialShare = 10;
  // The chosen kind's median this much slower than when it was confirmed starts a trial now.
  static constexpr double kDriftFactor = 1.5;

  // `published`: the window's word (bit c set: class c streams), written only by the leader.
  SlotStorePolicy(std::atomic<uint32_t>* published, bool leader, SlotStores setting);

  static int class_of(std::size_t piece_bytes);

  // Whether a slot piece of `piece_bytes` is written with streaming stores now.
  bool streams(std::size_t piece_bytes) const;

  // The leader's timing of one call whose slot pieces were of `piece_bytes`' class and written
  // with streaming stores or not, `filled_bytes` in all, which took `took` and ended at `now`.
  // Ignored elsewhere.
  void record(std::size_t piece_bytes, bool streamed, std::size_t filled_bytes,
              std::chrono::nanoseconds took, std::chrono::steady_clock::time_point now);

 private:
  // The last kTrialCalls times of some calls, in nanoseconds, oldest overwritten first.
  // Kinds of store compare by the median of the last few, which a few calls that the scheduler
  // delayed (members outnumbering cores) do not move.
  struct RecentTimes {
    int64_t ns[kTrialCalls] = {};
    uint32_t count = 0;
    void add(int64_t sample) { ns[count++ % kTrialCalls] = sample; }
    bool empty() const { return count == 0; }
    int64_t median(uint32_t last) const;  // of the last `last` (or as many as there are)
    int64_t shortest() const;             // of all kept (0 when empty)
  };
  struct Learning {
    bool streaming = false;  // the kind chosen
    bool trial = false;      // trying the other kind now
    bool skip_next = true;   // the first call after a change pays for it: not counted
    // The first phase is as short as a trial: a benchmark's (or a job's first) calls of one
    // size are few.
    bool sampling = true;            // in a trial or the first phase, not a period
    uint32_t samples = kTrialCalls;  // calls a kind's median takes (samples_for, see below)
    // The last calls' durations (of either kind): the shortest of them tells how long calls
    // are; a call the scheduler delayed must not shorten the sample it would be one of.
    RecentTimes durations;
    uint32_t counted = 0;  // calls counted in this phase
    uint32_t period = kFirstPeriod;
    int64_t confirmed = 0;  // the chosen kind's median when a trial last ended (0: none yet)
    // The last calls' times per 4 KiB filled, by kind (ordinary, streaming).
    RecentTimes recent[2];
    std::chrono::steady_clock::time_point last_trial{};  // when the last trial began
    std::chrono::steady_clock::duration retry_after = kRetryAfter;
  };
  void publish(int size_class, bool streaming);
  void end_phase(Learning& learning, int size_class, std::chrono::steady_clock::time_point now);
  static bool drifted(const Learning& learning);
  // How many calls a kind's sample takes, by the shortest of the last calls (nanoseconds).
  static uint32_t samples_for(int64_t shortest);

  std::atomic<uint32_t>* published_;
  bool leader_;
  SlotStores setting_;
  Learning learning_[kClasses];
};

// One SlotStorePolicy per kind of call, each with its own published word. The window knows no
// collective: its user numbers its kinds of call (core numbers them by op), below kKinds.
class SlotStorePolicies {
 public:
  static constexpr int kKinds = 16;

  // `published`: kKinds words of the window, word k for the kind of call numbered k.
  SlotStorePolicies(std::atomic<uint32_t>* published, bool leader, SlotStores setting);

  bool streams(int kind, std::size_t piece_bytes) const { return of(kind).streams(piece_bytes); }
  void record(int kind, std::size_t piece_bytes, bool streamed, std::size_t filled_bytes,
              std::chrono::nanoseconds took, std::chrono::steady_clock::time_point now) {
    of(kind).record(piece_bytes, streamed, filled_bytes, took, now);
  }

 private:
  // A kind out of range shares the last policy: a slower choice at worst, never a stray write.
  const SlotStorePolicy& of(int kind) const { return by_op_[index_of(kind)]; }
  SlotStorePolicy& of(int kind) { return by_op_[index_of(kind)]; }
  static std::size_t index_of(int kind) {
    return kind >= 0 && kind < kKinds ? static_cast<std::size_t>(kind) : kKinds - 1;
  }

  std::vector<SlotStorePolicy> by_op_;
};

}  // namespace weft::transport
