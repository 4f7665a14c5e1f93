// Path — one way of carrying messages to peers (TCP, shared memory), under the Router.
//
// The Router owns what every path shares: matching (tags, order, receives from anyone,
// mismatches), which peers failed and why, aborted contexts, the listener. A path moves bytes:
// it sends, it delivers what arrives to the Router (PathEvents), and it reports what it learns
// about peers (a connection that ended, a peer's report of a third one's death). Adding a path
// (RDMA, later) is a new directory implementing this interface, not a change to the others.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "transport/frame_header.h"
#include "transport/request.h"
#include "weft/error.h"

namespace weft::transport {

struct UnexpectedMessage;

// Copies the payload to `destination` (room for header.bytes); returns null, or why it could
// not (the receive then fails with that error).
using PayloadFill = std::function<std::shared_ptr<const Error>(void* destination)>;

// Where the payload of a message that starts arriving now goes (PathEvents::begin_arrival).
struct Arrival {
  RequestPtr receive;                       // its receive: read into receive->data
  UnexpectedMessage* unexpected = nullptr;  // nobody waits yet: read into unexpected->buffer
  bool no_room = false;                     // nobody waits and no buffer that large could be had
  // Nobody waits, and the payload is to stay in the socket for now: `unexpected` has no buffer
  // (PathEvents::resume_arrival says when and where to read it).
  bool parked = false;
  // None of them set: the payload is read and dropped (its receive expected something else,
  // and has failed with kMismatch).
};

// What a path tells the Router. Thread-safe; a path calls it with no lock of its own held that
// the Router's calls into the path take (see each path's lock order).
class PathEvents {
 public:
  virtual ~PathEvents() = default;
  // A whole message (header.kind is kData) meets a posted receive, or waits for a later one.
  // Calls fill at most once, before returning; not at all when the message is dropped (its
  // receive expected something else: that receive fails with kMismatch).
  virtual void deliver(const FrameHeader& header, const PayloadFill& fill) = 0;
  // A message whose payload will be read in place as it comes (TCP). With `may_park` (the path
  // can leave the payload in its socket), a message that nobody waits for, while no receive from
  // its sender is posted either, is parked when it is large (2 MiB or more): its receive, usually
  // posted moments later, then takes the payload straight into its own buffer, with no copy
  // through a buffer of ours. So is any such message once its sender's earlier ones that nobody
  // took hold 8 MiB of ours: a peer that runs ahead waits for us instead of growing our memory.
  virtual Arrival begin_arrival(const FrameHeader& header, bool may_park) = 0;
  // Where the payload of a parked message goes now: into the receive that claimed it (or
  // nowhere, when that receive did not fit it), or into a buffer of its own when a receive that
  // may wait behind it was posted, or when `give_up` while its sender holds less than 8 MiB of
  // ours; Arrival::parked while it is to stay.
  virtual Arrival resume_arrival(UnexpectedMessage* message, bool give_up) = 0;
  // The whole payload of an unexpected message is in: a receive that claimed it meanwhile
  // completes now.
  virtual void finish_arrival(UnexpectedMessage* message) = 0;
  // The payload of an unexpected message (parked or not) will never be complete (its
  // connection ended, `why`): a receive that claimed it fails with that.
  virtual void abandon_arrival(UnexpectedMessage* message, std::shared_ptr<const Error> why) = 0;
  // The peer is gone: it `died` (or wrote what no weft rank writes), and every other rank is
  // told; or it left cleanly or refused us, and only what names it fails.
  virtual void peer_lost(int peer, std::shared_ptr<const Error> error, bool died) = 0;
  // A peer aborted a context.
  virtual void context_aborted(uint64_t context, std::shared_ptr<const Error> error) = 0;
  // What a peer met only now must still learn: the deaths (peer, text) and aborted contexts
  // (context, text) known here.
  struct News {
    std::vector<std::pair<int, std::string>> deaths;
    std::vector<std::pair<uint64_t, std::string>> aborted_contexts;
  };
  virtual News news_for_new_peer() const = 0;
  // The first death seen, the usual cause of a later clean departure; null if none.
  virtual std::shared_ptr<const Error> first_death() const = 0;
};

class Path {
 public:
  virtual ~Path() = default;

  virtual const char* name() const = 0;
  // Whether sends to `peer` can go this way. Set once the rendezvous is done.
  virtual bool reaches(int peer) const = 0;
  // Whether this path finds out by itself that a peer died or left (a TCP connection ends;
  // shared memory says nothing).
  virtual bool notices_departures() const = 0;
  // A path that notices departures starts watching `peer`, which may talk to us another way:
  // false when it cannot yet (the peer's address is unknown). Returns at once.
  virtual bool watch(int peer) {
    (void)peer;
    return false;
  }
  // Where the peer is, for error messages; empty when this path has no address for it.
  virtual std::string peer_address(int peer) const {
    (void)peer;
    return {};
  }

  virtual void post_send(const RequestPtr& request) = 0;
  // True when the send was still pending and will now never complete.
  virtual bool cancel_send(Request& request, const std::shared_ptr<const Error>& reason) = 0;
  // A receive this path is filling right now (its payload streaming in) is detached and
  // failed; false when it fills no such receive.
  virtual bool detach_receive(Request& request, const std::shared_ptr<const Error>& reason) {
    (void)request;
    (void)reason;
    return false;
  }

  // A parked message of this path (PathEvents::begin_arrival) is wanted: a receive claimed it,
  // or wants it out of the way. The path resumes it soon even when no thread polls it.
  virtual void parked_message_wanted() {}

  // Progress on the calling thread, never blocking (Transport::poll). `waited_for` is the
  // request a thread waits on when this path carries it, else null (the path may still move
  // its other messages along). Returns whether it moved any bytes.
  virtual bool poll(Request* waited_for) = 0;
  virtual void start_polling(const Request* waited_for) { (void)waited_for; }
  virtual void stop_polling(const Request* waited_for) { (void)waited_for; }
  // Transport::completed_by_polling, for requests this path may complete.
  virtual bool completed_by_polling(const Request& request) const {
    (void)request;
    return false;
  }
  virtual bool pollers_have_own_cores() const { return false; }

  // The peer is gone. First: deliver what it sent that is still here.
  virtual void drain_from(int peer) { (void)peer; }
  // Then: never send to it again; sends still queued for it join `victims` (or fail at once).
  virtual void drop_peer(int peer, const std::shared_ptr<const Error>& why,
                         std::vector<RequestPtr>& victims) = 0;
  // Tells every peer this path is connected to (but `peer` itself) that `peer` died, or that a
  // context was aborted. Paths that carry no news do nothing.
  virtual void announce_death(int peer, const std::string& text) {
    (void)peer;
    (void)text;
  }
  virtual void announce_abort(uint64_t context, const std::string& text) {
    (void)context;
    (void)text;
  }

  // Flushes queued sends until the deadline, says goodbye where it can, stops its threads, and
  // fails what is left with kAborted. Idempotent.
  virtual void shutdown(std::chrono::steady_clock::time_point flush_deadline) = 0;
};

}  // namespace weft::transport
