// Path — one way of carrying messages to peers (TCP, shared memory), under the Router.
//
// The Router owns what every path shares: matching (tags, order, receives from anyone,
// mismatches), which peers failed and why, aborted contexts. A path moves bytes: it sends, it
// delivers what arrives to the Router (PathEvents), and it reports what it learns about peers
// (a connection that ended, a peer's report of a third one's death). This interface is what
// every path needs; what only some paths do is a capability of its own that a path hands out:
// - departures() (departure_watch.h): the path notices by itself that a peer died or left, and
//   carries that news to its other peers (TCP, shared memory; a path without it is watched by
//   one that has it);
// - streamed_receiver() (streamed_arrivals.h): the path reads payloads in place as they stream
//   in, and may leave one in its socket until its receive comes (TCP).
// A path kind is made and introduced to its peers through the table of path kinds
// (path_table.h): adding a path is a new directory and a row there.
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

class DepartureWatch;
class StreamedReceiver;

// Copies the payload to `destination` (room for header.bytes); returns null, or why it could
// not (the receive then fails with that error).
using PayloadFill = std::function<std::shared_ptr<const Error>(void* destination)>;

// What a path tells the Router. Thread-safe; a path calls it with no lock of its own held that
// the Router's calls into the path take (see each path's lock order).
class PathEvents {
 public:
  virtual ~PathEvents() = default;
  // A whole message (header.kind is kData) meets a posted receive, or waits for a later one.
  // Calls fill at most once, before returning; not at all when the message is dropped (its
  // receive expected something else: that receive fails with kMismatch).
  virtual void deliver(const FrameHeader& header, const PayloadFill& fill) = 0;
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

  virtual void post_send(const RequestPtr& request) = 0;
  // True when the send was still pending and will now never complete.
  virtual bool cancel_send(Request& request, const std::shared_ptr<const Error>& reason) = 0;

  // Progress on the calling thread, never blocking (Transport::poll). `waited_for` is the
  // request a thread waits on when this path carries it, else null (the path may still move
  // its other messages along). Returns whether it moved any bytes.
  virtual bool poll(Request* waited_for) = 0;
  // Transport::start_polling / stop_polling / completed_by_polling / pollers_have_own_cores,
  // for this path's requests: how a waiter that drives the path itself should wait.
  virtual void start_polling(const Request* waited_for) { (void)waited_for; }
  virtual void stop_polling(const Request* waited_for) { (void)waited_for; }
  virtual bool completed_by_polling(const Request& request) const {
    (void)request;
    return false;
  }
  virtual bool pollers_have_own_cores() const { return false; }

  // The peer is gone. First, on every path: deliver what it sent that is still here.
  virtual void drain_from(int peer) { (void)peer; }
  // Then: never send to it again; sends still queued for it join `victims` (or fail at once).
  virtual void drop_peer(int peer, const std::shared_ptr<const Error>& why,
                         std::vector<RequestPtr>& victims) = 0;

  // Flushes queued sends until the deadline, says goodbye where it can, stops its threads, and
  // fails what is left with kAborted. Idempotent.
  virtual void shutdown(std::chrono::steady_clock::time_point flush_deadline) = 0;

  // Capabilities (above): null where this path has none. The same object every call.
  virtual DepartureWatch* departures() { return nullptr; }
  virtual StreamedReceiver* streamed_receiver() { return nullptr; }
};

}  // namespace weft::transport
