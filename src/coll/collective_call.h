// CollectiveCall — one running collective as an algorithm sees it: my rank and the group
// size, the call's signature and deadline, and point-to-point primitives whose messages are
// tagged with (sequence number, step), so that the messages of different calls and of
// different steps of one call can never be confused.
//
// Algorithms are written only against this class and the reduce kernels: they know nothing of
// sockets or transports. Peers are group ranks. Every wait is bounded by the call's deadline
// and throws weft::Error naming the op, sequence number and peer. Not thread-safe: one call
// runs on one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "core/communicator.h"
#include "core/op_signature.h"
#include "transport/shm/record_fault.h"
#include "util/deadline.h"

namespace weft::coll {

// Steps of one call are numbered below this bound.
inline constexpr uint32_t kMaxSteps = 1u << 20;

class CollectiveCall {
 public:
  using RequestPtr = core::RequestPtr;

  // Inline, as the other: every collective makes one, and a small one's whole path counts.
  CollectiveCall(core::Communicator& comm, const char* name, core::OpSignature signature,
                 int64_t seq, std::chrono::steady_clock::time_point deadline,
                 std::size_t segment_bytes)
      : CollectiveCall(comm, name, signature, seq, util::LazyDeadline(deadline), segment_bytes) {}
  // The deadline is `timeout` after the first wait that needs one (util::LazyDeadline).
  CollectiveCall(core::Communicator& comm, const char* name, core::OpSignature signature,
                 int64_t seq, std::chrono::milliseconds timeout, std::size_t segment_bytes)
      : CollectiveCall(comm, name, signature, seq, util::LazyDeadline(timeout), segment_bytes) {}
  // Tells the group's progress board that the call ended (a store write only when one of its
  // waits lasted long enough to report it).
  ~CollectiveCall() { comm_.progress_board().end_collective(seq_); }

  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  const core::OpSignature& signature() const { return signature_; }
  // Whether the call read its deadline: one of its waits went past its spin or needed a time
  // limit at once (a request's), or the call was given its deadline.
  bool waited() const { return deadline_.known(); }
  // Pipelining granularity for algorithms that split messages (tests make it tiny).
  std::size_t segment_bytes() const { return segment_bytes_; }

  core::RequestPtr isend(int peer, uint32_t step, const void* data, std::size_t bytes);
  core::RequestPtr irecv(int peer, uint32_t step, void* data, std::size_t bytes);
  void wait(const core::RequestPtr& request);
  void wait_all(std::span<const core::RequestPtr> requests);
  // Sends to one peer and receives from another (or the same) at once; returns when both are
  // done. Either side may be skipped with peer -1.
  void send_recv(int send_peer, uint32_t step, const void* send_data, std::size_t send_bytes,
                 int recv_peer, void* recv_data, std::size_t recv_bytes);
  void send(int peer, uint32_t step, const void* data, std::size_t bytes);
  void recv(int peer, uint32_t step, void* data, std::size_t bytes);
  // memcpy for a rank's own block while `in_flight` travels: in pieces, moving the requests
  // along between them, so that a large copy does not leave a socket unread and unwritten
  // meanwhile (the peer's bytes would stop at the socket buffers). Waits for none of them.
  void copy_while_in_flight(void* to, const void* from, std::size_t bytes,
                            const std::vector<core::RequestPtr>& in_flight);

  // The same call run on another group (a host group of this one, for hierarchical
  // algorithms): same name, signature, deadline and segment size, that group's next sequence
  // number (its members make their sub-calls in the same order). On this host's group, a
  // member that is not the leader gets kMemberGrace more (at most half the timeout), so that a
  // leader that times out across hosts tells it why first.
  static constexpr std::chrono::milliseconds kMemberGrace{2000};
  CollectiveCall on(core::Communicator& group) const;
  core::Communicator& communicator() const { return comm_; }

  // --- same-host rounds (coll/shm; protocol in transport/shm/local_window.h) ---
  // The group's shared-memory window, null when the group cannot have one.
  core::LocalWindow* window() { return window_checked_ ? window_ : first_window(); }
  // Bytes of my slot one round may use: the window's slot, or less when segment_bytes() is
  // smaller (tests use that to run many rounds on small data).
  std::size_t round_bytes();
  // Rounds of at most this many bytes travel in the arrival line (round_slot(bytes)).
  static constexpr std::size_t inline_bytes() { return core::LocalWindow::kInlineBytes; }
  // My slot of the next round.
  uint8_t* round_slot();
  // The same for a round of `bytes` bytes, which every member must agree on (derived from the
  // signature): a tiny round's data travels with the arrival (LocalWindow::my_slot).
  uint8_t* round_slot(std::size_t bytes);
  // Copies `bytes` from `from` into my slot at `to`, with ordinary or streaming stores as the
  // group now finds faster for rounds in which I write `round_piece` bytes into my slot (pass
  // the same value for every copy of a round; transport/shm/slot_store_policy.h). The first round
  // piece of a call that the choice applies to decides for all of the call's rounds, so that the
  // call is timed as one kind (the first piece is the largest in every algorithm).
  void fill_slot(uint8_t* to, const void* from, std::size_t bytes, std::size_t round_piece);
  // Whether this call's slot fills stream (after its first fill_slot that the choice applies
  // to; false before): for other data a member writes into its slot, such as a share it
  // reduced, which should go the way the call is timed.
  bool slot_fills_stream() const { return streamed_fills_; }
  // Hands this call's time to the slot stores' choice, once the call is done (member 0 only).
  void report_slot_fills();
  // Arrives, waits for every member, checks that all run this call; throws the group's error.
  void finish_round();
  // finish_round() in two halves, to do work of my own that touches no slot while the others
  // arrive: arrive_round(), that work, wait_round().
  void arrive_round();
  void wait_round();
  // A member's slot of the round just finished.
  const uint8_t* member_slot(int rank);
  // A member's slot of the round just finished, written by round_slot(bytes).
  const uint8_t* member_slot(int rank, std::size_t bytes);
  // Whether the members outnumber their cores, so that every round costs a turn of the
  // scheduler (the same answer on every member).
  bool members_outnumber_cores();
  // Whether I may copy straight out of every other member's memory (one copy instead of two
  // through the slots). Members may differ: agree in a round before relying on it.
  bool can_read_members();
  // Copies `bytes` at `address`, an address in member `rank`'s memory that it published in a
  // round, to `local`. The member must keep that memory unchanged until a later round. Throws
  // kSystem naming the member when the kernel refuses.
  void read_member_memory(int rank, uint64_t address, void* local, std::size_t bytes);
  // Fails the call because member `rank` published `what` (e.g. "an all_to_all header") that
  // no weft rank writes, as `fault` says: poisons the window, so that every member fails too,
  // fails the group's collectives, and throws kPeerFailure naming the member.
  [[noreturn]] void fail_member_record(int rank, const char* what,
                                       const transport::RecordFault& fault);

  // --- eager rounds (transport/shm/local_window.h): a rooted call of at most eager_bytes() in
  // which the writers do not wait for the readers ---
  static constexpr std::size_t eager_bytes() { return core::LocalWindow::kEagerBytes; }
  // Waits only when my ring of lines is full; throws the group's error (also for a mismatch
  // found in an old eager call).
  void begin_eager();
  // Where a writer puts its data.
  uint8_t* my_eager_data() { return window()->my_eager_data(); }
  // Waits for `rank`'s data of this call and checks that it runs this call.
  const uint8_t* await_eager_data(int rank);
  // Publishes that I am done with this call (after my writes and reads).
  void end_eager() { window()->end_eager(); }

 private:
  CollectiveCall(core::Communicator& comm, const char* name, core::OpSignature signature,
                 int64_t seq, util::LazyDeadline deadline, std::size_t segment_bytes)
      : comm_(comm),
        name_(name),
        signature_(signature),
        seq_(seq),
        deadline_(deadline),
        segment_bytes_(segment_bytes) {}
  // window() at its first use in this call (opens the group's window if need be); out of
  // line, so that the later uses stay two instructions.
  core::LocalWindow* first_window();
  uint64_t tag(uint32_t step) const;
  core::OpInfo info_for(const core::Request& request) const;
  // This call as the window's errors describe it (with the member concerned, if any).
  core::OpInfo window_info(int peer = -1) const;

  core::Communicator& comm_;
  const char* name_;
  core::OpSignature signature_;
  int64_t seq_;
  mutable util::LazyDeadline deadline_;  // read lazily, also by on()
  std::size_t segment_bytes_;
  core::LocalWindow* window_ = nullptr;
  bool window_checked_ = false;
  // The slot fills of this call that the kind of store applies to: the round piece that chose
  // the kind (0: none yet), the kind, the bytes filled, and (member 0 only) since when.
  std::size_t choosing_piece_ = 0;
  bool streamed_fills_ = false;
  std::size_t filled_bytes_ = 0;
  std::chrono::steady_clock::time_point first_fill_{};
};

}  // namespace weft::coll
