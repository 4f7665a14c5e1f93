// Communicator — a group as the algorithms and the API see it: members, my rank, the two
// message contexts (point-to-point and collective), sequence numbers, deadlines, and waiting
// on requests with errors that say which rank, op and peer.
//
// Ranks in this interface are group ranks; the communicator maps them to world ranks for the
// transport. Thread-safe. Once aborted (by abort() or by a failure that breaks the group's
// collectives), every later collective fails at once with the root cause.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/op_queue.h"
#include "core/op_recorder.h"
#include "core/op_signature.h"
#include "core/progress_board.h"
#include "core/runner_claim.h"
#include "core/world.h"
#include "transport/request.h"
#include "transport/shm/local_window.h"
#include "util/choice_memo.h"
#include "util/mutex.h"
#include "util/network_settings.h"
#include "weft/buffer.h"

namespace weft::core {

// The transport's request handles, in the vocabulary algorithms use: layers above core never
// name the transport.
using Request = transport::Request;
using RequestPtr = transport::RequestPtr;
inline constexpr int kAnyPeer = transport::kAnyPeer;
// The same-host window the shared-memory algorithms run their rounds in.
using LocalWindow = transport::LocalWindow;
using LocalWindowOptions = transport::LocalWindowOptions;
using SlotStorePolicy = transport::SlotStorePolicy;
using WaitResult = transport::WaitResult;
using StampMismatch = transport::StampMismatch;
// The window learns its slot stores per kind of call: core's kinds are its ops.
static_assert(kOpKindCount <= LocalWindow::kCallKinds);

enum class Channel : uint64_t { kPointToPoint = 0, kCollective = 1 };

// Where the members of a group run: hosts numbered by first appearance in group-rank order,
// each with its members in ascending group rank (the first is the host's leader).
struct HostLayout {
  std::vector<int> host_of;               // per group rank
  std::vector<std::vector<int>> members;  // per host
  int hosts() const { return static_cast<int>(members.size()); }
  // The most members one host has.
  int largest_host() const;
};

class Communicator;
// A group spread over hosts, split for hierarchical algorithms: my host's members (over shared
// memory), and the hosts' leaders (null on members that lead no host).
struct HostGroups {
  std::shared_ptr<Communicator> local;
  std::shared_ptr<Communicator> leaders;
};

// What an operation is, for error messages.
struct OpInfo {
  const char* name;  // "send", "recv", "all_reduce", ...
  int peer = -1;     // group rank, -1 when any / none
  int64_t bytes = -1;
  int64_t seq = -1;
  // The timeout that set this wait's deadline (the call's own, or 0: the group's): error
  // messages quote it, and the wait reports to the progress board part-way through it.
  std::chrono::milliseconds timeout{0};
};

class Communicator : public std::enable_shared_from_this<Communicator> {
 public:
  // context_base must be even and the same on every member; +0 and +1 are this group's.
  // timeout bounds every wait of the group; 0: the world's.
  static std::shared_ptr<Communicator> create(std::shared_ptr<World> world, std::string name,
                                              std::vector<int> world_ranks, uint64_t context_base,
                                              std::chrono::milliseconds timeout = {});
  ~Communicator();

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(world_ranks_.size()); }
  const std::string& name() const { return name_; }
  // A number no other communicator of this process has had or will have: what a memory kept
  // outside the group keys on (a name comes back when a group is rebuilt, an address too).
  uint64_t serial() const { return serial_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  World& world() { return *world_; }
  const std::shared_ptr<World>& world_ptr() const { return world_; }
  int world_rank_of(int group_rank) const { return world_ranks_[group_rank]; }
  // "rank N" for error messages, with "(global rank M)" where the numbers differ: a group's
  // ranks, not the world's, and those of the host groups a hierarchical collective runs in.
  std::string describe_rank(int group_rank) const;
  // -1 when the world rank is not a member.
  int group_rank_of(int world_rank) const;

  // Posts a message to / a receive from a group rank (kAnyPeer for any).
  transport::RequestPtr post_send(Channel channel, int peer, uint64_t tag, const OpSignature& op,
                                  const void* data, std::size_t bytes);
  transport::RequestPtr post_recv(Channel channel, int peer, uint64_t tag, const OpSignature& op,
                                  void* data, std::size_t bytes);
  // Waits until the request is done or the deadline passes; throws weft::Error with this
  // group's context on failure, mismatch or timeout (cancelling the request). A timeout says
  // which ranks had not reached the op (a collective) or what the peer was doing (a
  // point-to-point op), from the progress board.
  void wait(transport::Request& request, const OpInfo& info,
            std::chrono::steady_clock::time_point deadline);
  std::chrono::steady_clock::time_point deadline_from_now() const;
  // Moves the request along as a wait's poll would, without waiting: for a caller that has
  // work of its own to do while the request is in flight.
  void progress(transport::Request& request);
  // Withdraws a pending request so that its buffer is no longer touched.
  void cancel(Request& request, std::shared_ptr<const Error> reason);

  // The next collective sequence number (all members call collectives in the same order): for
  // the holder of runner_claim(), or of the parent group's for a host group's sub-call. One
  // thread at a time, so a load and a store: an atomic add is a full barrier on x86, which
  // waits for the stores before it, and a small collective's root makes many.
  int64_t next_seq() {
    int64_t seq = next_seq_.load(std::memory_order_relaxed);
    next_seq_.store(seq + 1, std::memory_order_relaxed);
    return seq;
  }

  ErrorContext context_for(const OpInfo& info) const;
  void abort(const std::string& reason);
  // Whether the group was aborted or its collectives broke: the checks below then throw.
  bool troubled() const { return troubled_.load(std::memory_order_acquire); }
  // Throws the stored error when the group was aborted. Inline, as the next: every call
  // checks, and on the healthy path it is one load.
  void check_not_aborted(const OpInfo& info) const {
    if (troubled()) [[unlikely]]
      throw_if_aborted(info);
  }
  // Throws the stored error when the group's collectives can no longer run (a member died, or
  // an earlier collective failed on some rank).
  void check_collectives_usable(const OpInfo& info) const {
    if (troubled()) [[unlikely]]
      throw_if_collectives_broken(info);
  }
  // A collective failed here: fail the group's pending collectives on every rank, with this
  // cause, so that nobody waits for a partner that has given up.
  void fail_collectives(std::shared_ptr<const Error> cause);
  // `member` published `record` (e.g. "an all_to_all header") in its part of the window as no
  // weft rank writes it (`fault`: the field, the value and the limit): poisons the window,
  // fails the group's collectives and throws kPeerFailure naming the member (group and global
  // rank).
  [[noreturn]] void fail_window_record(LocalWindow& window, int member, const char* record,
                                       const std::string& fault, const OpInfo& info);

  // Whether every member runs on this host (host identities from the rendezvous) and shared
  // memory is allowed (WEFT_TRANSPORT is not tcp): same-host algorithms may then be chosen.
  bool single_host() const { return single_host_; }
  // WEFT_ALGO as it was when the group was made (read once: the environment is a linear scan,
  // a visible part of a small collective's cost).
  const std::string& algorithm_setting() const { return algorithm_setting_; }
  // WEFT_NET_* as they were when the group was made: the network the selector prices its
  // algorithms on (coll/selector.h).
  const util::NetworkSettings& network_settings() const { return network_settings_; }
  const HostLayout& host_layout() const { return layout_; }
  // Whether hierarchical algorithms help: several hosts, one of them with several members, and
  // shared memory allowed (WEFT_TRANSPORT as it was when the group was made).
  bool spans_hosts_with_neighbours() const { return spans_hosts_with_neighbours_; }
  // The algorithms the selector chose for this group, by shape of call: it answers the same for
  // the same shape, and pricing every candidate on each call is a visible part of a small
  // collective's cost.
  util::ChoiceMemo& selection_memo() const { return selection_memo_; }
  // The host split of this group, made at the first call (every member makes that call at the
  // same collective; the contexts are derived from this group's, not drawn from a counter, so
  // a concurrent new_group cannot shift them).
  HostGroups& host_groups();
  // The host groups if host_groups() made them already, else null. Never makes them.
  const HostGroups* made_host_groups() const {
    return made_host_groups_.load(std::memory_order_acquire);
  }
  // An error raised in one of this group's host groups names that group's ranks: the same error
  // with which ranks of this group they are (else the error itself).
  Error with_host_group_ranks_explained(const Error& error) const;
  // The group's shared-memory window, made at the first call (every member makes that call at
  // the same collective, `info`); null when the group is not on one host or a member cannot map
  // it. A member that never comes is a timeout naming it.
  LocalWindow* local_window(const OpInfo& info, std::chrono::steady_clock::time_point deadline);
  // The window once it is open (null before): the fast path, which needs no deadline.
  LocalWindow* open_window() const { return open_window_.load(std::memory_order_acquire); }
  // One round of the window protocol (arrive, wait for every member, compare what they run),
  // with failures as this group's errors: a mismatch names both calls, a member that exited
  // or stalls is named. Throws after poisoning the window, so the other members stop too.
  void complete_window_round(LocalWindow& window, const OpSignature& op, std::size_t round_bytes,
                             const OpInfo& info, util::LazyDeadline& deadline);
  // complete_window_round in two halves, for work of the caller's own (that touches no slot)
  // while the others arrive.
  void arrive_window_round(LocalWindow& window, const OpSignature& op, std::size_t round_bytes,
                           const OpInfo& info);
  void wait_window_round(LocalWindow& window, const OpInfo& info, util::LazyDeadline& deadline);
  // The steps of an eager call (LocalWindow's eager rounds) that wait, with the same errors:
  // beginning it (a full ring waits; an old call's mismatch is found), and waiting for the
  // member whose line this call reads (its stamp must be mine).
  void begin_eager_round(LocalWindow& window, const OpSignature& op, const OpInfo& info,
                         util::LazyDeadline& deadline);
  void wait_eager_round(LocalWindow& window, int member, const OpInfo& info,
                        util::LazyDeadline& deadline);

  OpQueue& queue() { return queue_; }
  // Held by whichever thread runs one of this group's collectives (core/runner_claim.h).
  RunnerClaim& runner_claim() { return runner_claim_; }
  // Where this group's members say which op they are stuck in (core/progress_board.h).
  ProgressBoard& progress_board() { return board_; }
  // What this group records of its operations (flight recorder, WEFT_TRACE timeline).
  OpRecorder& recorder() { return recorder_; }
  // Logs this group's flight recorder and writes its dump files, once, after a failure that
  // is not the user's own abort.
  void dump_flight_recorder(const Error& cause);
  // Child groups' message contexts: the same on every member, different for every child.
  uint64_t next_child_context();
  // This group's shrinks (api/shrink.cc), counted on each member from 1: the survivors of one
  // failure call shrink the same number of times, so they agree on the number and on the new
  // group's context, which is derived from it apart from next_child_context's (a collision is
  // as likely as two 62-bit hashes meeting).
  struct ShrinkRound {
    int epoch;
    uint64_t context;
  };
  ShrinkRound next_shrink_round();
  // Even; this group's messages carry it (+0 point-to-point, +1 collective).
  uint64_t context_base() const { return context_base_; }

  // From World's failure dispatch.
  void on_peer_failed(int world_peer, std::shared_ptr<const Error> error);
  void on_context_aborted(uint64_t context, std::shared_ptr<const Error> error);

 private:
  // The slow halves of the checks above, once troubled_ is set: they take the lock.
  [[gnu::cold]] void throw_if_aborted(const OpInfo& info) const;
  [[gnu::cold]] void throw_if_collectives_broken(const OpInfo& info) const;
  bool collectives_broken() const;
  // What the window's waits call now and then once they sleep (made once, not at every call):
  // whether the group's collectives broke; and, once the wait has lasted, its report to the
  // progress board (the window's own loop does the timing: its fast path pays nothing).
  const std::function<bool()> broken_check_ = [this] {
    report_window_wait();
    return collectives_broken();
  };
  // The window wait in progress (a group's collectives run one at a time), set before each so
  // that broken_check_ can report it: two stores on the fast path.
  struct WindowWait {
    const OpInfo* info = nullptr;
    util::LazyDeadline* deadline = nullptr;
  };
  WindowWait window_wait_;
  void report_window_wait();
  // Throw this group's error for a window wait that failed, or for two members that called
  // different collectives (after poisoning the window and failing the group's collectives).
  // everyone_waited: the wait was for every member (else for the one in result.members).
  [[noreturn]] void fail_window_wait(LocalWindow& window, const WaitResult& result,
                                     const OpInfo& info, bool everyone_waited);
  [[noreturn]] void fail_window_mismatch(LocalWindow& window, const StampMismatch& mismatch,
                                         const OpInfo& info);
  // The timeout error of a window wait: the members that had not arrived, where they were
  // last seen, and (when every member was waited for) the ones that had.
  std::shared_ptr<const Error> window_timeout(LocalWindow& window, const WaitResult& result,
                                              const OpInfo& info, bool everyone_waited);
  // The window's setup timed out (LocalWindow::open): name the members that never joined it.
  [[noreturn]] void fail_window_setup(const LocalWindowOptions& options, const OpInfo& info,
                                      const Error& cause);
  void fail_window(LocalWindow& window, std::shared_ptr<const Error> error);
  // Spins polling the transport, then sleeps until the request is done or the deadline;
  // returns whether it is done.
  bool poll_then_sleep(transport::Request& request, std::chrono::steady_clock::time_point deadline);
  // When a wait of `info` that ends at `deadline` reports to the progress board.
  std::chrono::steady_clock::time_point report_point(std::chrono::steady_clock::time_point deadline,
                                                     const OpInfo& info) const;
  // After a timeout whose cancel came too late: waits (bounded) for the transfer under way to
  // end; whether it did.
  bool finishes_uncancelled(transport::Request& request);
  static constexpr std::chrono::milliseconds kFinishingGrace{10'000};
  // By when a report made now from that wait must be written (or given up).
  std::chrono::steady_clock::time_point report_until(std::chrono::steady_clock::time_point deadline,
                                                     const OpInfo& info) const;
  // poll_then_sleep in two parts when it lasts: up to the report point, then (after reporting
  // this member as waiting in the op) up to the deadline.
  bool wait_reporting(transport::Request& request, const OpInfo& info,
                      std::chrono::steady_clock::time_point deadline);
  // "all_reduce #4 did not finish within its 5000 ms timeout (waiting for a message from
  // rank 2)": what this rank knows of its own timeout, before it asks the others.
  std::string timeout_head(const transport::Request& request, const OpInfo& info) const;
  // The message of a request's timeout; empty when the request finished meanwhile (a
  // collective's diagnosis keeps waiting on it while it reads the board).
  std::string describe_timeout(transport::Request& request, const OpInfo& info);
  // The timeout `info`'s wait is bounded by.
  std::chrono::milliseconds timeout_of(const OpInfo& info) const {
    return info.timeout.count() > 0 ? info.timeout : timeout_;
  }
  // What the board says of `members` (the others left unknown), read until `until`.
  std::vector<Sighting> read_board(const std::vector<int>& members,
                                   std::chrono::steady_clock::time_point until);
  Communicator(std::shared_ptr<World> world, std::string name, std::vector<int> world_ranks,
               uint64_t context_base, std::chrono::milliseconds timeout);
  uint64_t context(Channel channel) const { return context_base_ + static_cast<uint64_t>(channel); }
  // `own_view` is appended to the cause's message: what this rank saw, when it had timed out
  // itself before the cause reached it.
  Error describe_failure(const transport::Request& request, const OpInfo& info,
                         const std::string& own_view = "") const;
  // A failure of this group reaches members waiting in its window or in its host groups.
  void tell_shared_memory_waiters(const std::shared_ptr<const Error>& cause);

  std::shared_ptr<World> world_;
  std::string name_;
  uint64_t serial_;
  std::vector<int> world_ranks_;
  int rank_ = -1;
  uint64_t context_base_;
  std::chrono::milliseconds timeout_;
  std::atomic<int64_t> next_seq_{0};
  OpRecorder recorder_;
  ProgressBoard board_;
  std::atomic<uint64_t> children_{0};
  std::atomic<int> shrinks_{0};

  mutable util::Mutex mutex_;
  std::shared_ptr<const Error> aborted_ WEFT_GUARDED_BY(mutex_);
  // A member died: collectives cannot run.
  std::shared_ptr<const Error> broken_collectives_ WEFT_GUARDED_BY(mutex_);
  // Set (under mutex_) once aborted_ or broken_collectives_ is, which every abort sets too:
  // the healthy path of every collective checks it instead of taking the lock twice.
  std::atomic<bool> troubled_{false};
  bool single_host_ = false;
  bool spans_hosts_with_neighbours_ = false;
  std::string algorithm_setting_;
  mutable util::ChoiceMemo selection_memo_;
  util::NetworkSettings network_settings_;
  util::Mutex window_mutex_;
  bool window_opened_ WEFT_GUARDED_BY(window_mutex_) = false;
  std::unique_ptr<LocalWindow> window_ WEFT_GUARDED_BY(window_mutex_);
  std::atomic<LocalWindow*> open_window_{nullptr};  // for failure paths on other threads
  HostLayout layout_;
  util::Mutex host_groups_mutex_;
  std::unique_ptr<HostGroups> host_groups_ WEFT_GUARDED_BY(host_groups_mutex_);
  std::atomic<HostGroups*> made_host_groups_{nullptr};  // for failure paths on other threads
  RunnerClaim runner_claim_;
  OpQueue queue_;  // last member: its worker joins before anything above is destroyed
};

}  // namespace weft::core
