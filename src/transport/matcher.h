// Matcher — pairs incoming messages with posted receives (MPI's two queues).
//
// Posted receives wait in post order; messages that arrive first wait, in arrival order, in
// pooled buffers ("unexpected" messages), possibly while their payload is still streaming in,
// or without a buffer while their payload is left in the sender's socket ("parked": a large
// message that its receive, posted soon, can take straight into its own buffer).
// The list nodes of both queues are kept for reuse (up to kSpareNodes each), so that matching a
// message allocates nothing in the steady state.
// Not thread-safe: the transport holds its lock around every call.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <vector>

#include "transport/buffer_pool.h"
#include "transport/frame_header.h"
#include "transport/request.h"

namespace weft::transport {

struct UnexpectedMessage {
  FrameHeader header;
  BufferPool::Buffer buffer;
  std::size_t capacity = 0;
  bool complete = false;  // the whole payload has arrived
  RequestPtr claimed_by;  // a receive posted while the payload was still arriving
  bool parked = false;    // the payload waits in the socket: no buffer yet
  // Parked, but a receive that it does not match was posted from its sender (or from anyone),
  // which may wait for a message behind it: read it into a buffer after all.
  bool unpark_wanted = false;
};

class Matcher {
 public:
  explicit Matcher(BufferPool& pool) : pool_(pool) {}
  // Makes room for senders 0 .. count - 1 up front: their first unexpected message then costs
  // no allocation (a sender past them still gets room when it comes).
  void expect_senders(int count);

  // The first posted receive matching the header, removed from the queue; null if none.
  RequestPtr take_posted(const FrameHeader& header);
  // Queues a message nobody waits for yet; its buffer can hold header.bytes. Throws
  // std::bad_alloc, queuing nothing, when no such buffer can be had.
  UnexpectedMessage* add_unexpected(const FrameHeader& header);
  // Queues a message nobody waits for yet whose payload stays where it is for now (parked).
  UnexpectedMessage* add_parked(const FrameHeader& header);
  // A parked message gets its buffer after all; throws std::bad_alloc (leaving it parked) when
  // none can be had.
  void unpark(UnexpectedMessage* message);
  // Whether a posted receive waits for a message from `peer` (any receive from anyone counts).
  bool has_posted_from(int peer) const;
  // Marks the parked messages of `peer` (kAnyPeer: of everyone) that no receive claimed as
  // unpark_wanted; returns whether there were any.
  bool want_parked_from(int peer);
  int parked() const { return parked_; }
  // Bytes of buffer that the unexpected messages from `peer` hold (parked ones hold none).
  std::size_t held_from(int peer) const;
  // The first unclaimed unexpected message matching the receive; null if none.
  UnexpectedMessage* find_unexpected(const Request& receive);
  void erase_unexpected(UnexpectedMessage* message);
  void add_posted(RequestPtr receive);
  bool erase_posted(const Request* receive);
  // Removes and returns every posted receive from `peer` (kAnyPeer: all of them).
  std::list<RequestPtr> take_posted_from(int peer);
  // Removes and returns the receives of a context.
  std::list<RequestPtr> take_posted_of_context(uint64_t context);
  // Detaches a receive from the unexpected message it claimed; false if it claimed none.
  bool release_claim(const Request* receive);
  // Detaches and returns the receives that claimed unfinished messages from `peer`.
  std::list<RequestPtr> take_claims_from(int peer);
  // A posted receive of the same operation as this message, from its sender, that expects a
  // different signature (removed from the queue); null if none.
  RequestPtr take_conflicting_posted(const FrameHeader& header);
  // An unexpected message of the same operation as this receive, from its sender, that carries
  // a different signature; null if none.
  const UnexpectedMessage* find_conflicting_unexpected(const Request& receive) const;
  // Every posted receive (shutdown).
  std::list<RequestPtr> take_all_posted() { return std::move(posted_); }

 private:
  static constexpr std::size_t kSpareNodes = 64;

  static bool matches(const Request& receive, const FrameHeader& header);
  // A node at the end of the unexpected queue (a spare one when there is one), with `header`.
  UnexpectedMessage& queue_unexpected(const FrameHeader& header);
  // Removes the receive at `it` from the queue and returns it.
  RequestPtr remove_posted(std::list<RequestPtr>::iterator it);
  // held_ has a count for `source` (may throw std::bad_alloc).
  void make_room_for_sender(uint32_t source);
  // The message's buffer of `capacity` bytes counts towards (or, given back, off) its sender's.
  void hold(const UnexpectedMessage& message, std::size_t capacity);
  void release(const UnexpectedMessage& message, std::size_t capacity);

  BufferPool& pool_;
  std::list<RequestPtr> posted_;
  std::list<UnexpectedMessage> unexpected_;
  int parked_ = 0;                                 // parked messages queued
  std::vector<std::size_t> held_;                  // held_from, by sender
  std::list<RequestPtr> spare_posted_;             // emptied nodes
  std::list<UnexpectedMessage> spare_unexpected_;  // reset nodes
};

// Whether the message fits the receive (its signature and size).
bool fits(const Request& receive, const FrameHeader& header);
// Null when the message fits the receive; otherwise the kMismatch error, and the receive's
// received_signature / received_bytes filled in.
std::shared_ptr<const Error> check_fit(Request& receive, const FrameHeader& header);

}  // namespace weft::transport
