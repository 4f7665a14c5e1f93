// Transport — moves tagged byte messages between the ranks of one job. Knows no collective.
//
// Contract:
// - post_send / post_recv hand over a Request; the transport completes or fails it exactly
//   once. Receives match on (source, context, tag); a receive for kAnyPeer matches the first
//   message from anyone. Messages from one sender with the same (context, tag) are matched in
//   the order they were sent; posted receives are matched in the order they were posted.
// - A message whose signature or length differs from the matching receive's fails that
//   receive with kMismatch (received_signature / received_bytes say what the sender ran).
// - When a peer dies, every pending request that names it fails with kPeerFailure naming it,
//   and the failure listener hears about it (once per peer).
// - cancel() removes a pending request so its buffer is no longer touched.
// - abort_context() fails the pending requests of a context here and tells every connected
//   peer, whose listener hears about it.
// Every method is thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "transport/request.h"

namespace weft::transport {

struct TransportListener {
  // A peer died (not: shut down cleanly). Called on a transport thread: be quick.
  std::function<void(int peer, std::shared_ptr<const Error> error)> on_peer_failed;
  // A peer aborted a context.
  std::function<void(uint64_t context, std::shared_ptr<const Error> error)> on_context_aborted;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  virtual void post_send(const RequestPtr& request) = 0;
  virtual void post_recv(const RequestPtr& request) = 0;
  // True when the request was still pending and will now never complete.
  virtual bool cancel(Request& request, std::shared_ptr<const Error> reason) = 0;
  // Moves the request along on the calling thread if that can be done without blocking (reads
  // what its peer has sent, writes what is queued), so that a thread waiting for it does not
  // have to be woken by the transport's own thread. Never blocks; may do nothing. Returns
  // whether it moved any bytes (a waiter that is moving data is not idle: it keeps spinning).
  virtual bool poll(Request& request) = 0;
  // A thread about to poll (spin on a request) says so, and says when it stops, before it
  // sleeps: a transport that has its own thread look for messages keeps that thread out of the
  // way of the poller (whose reads it would only duplicate, at the price of a wake-up per
  // message), and one whose messages nobody notices unless someone looks wakes its own thread
  // only when no thread polls. Calls nest: one stop, with the same request, for each start.
  virtual void start_polling(const Request&) {}
  virtual void stop_polling(const Request&) {}
  // True when the waiter of this request moves it along itself by polling (no other thread is
  // woken): such a wait is worth a longer spin.
  virtual bool completed_by_polling(const Request&) const { return false; }
  // True when a waiter that completes its request by polling may spin without yielding: every
  // rank it polls for has a core of its own.
  virtual bool pollers_have_own_cores() const { return false; }

  virtual void abort_context(uint64_t context, std::shared_ptr<const Error> reason) = 0;
  virtual void set_listener(TransportListener listener) = 0;

  // "host:port" of a peer, for error messages.
  virtual std::string peer_address(int peer) const = 0;
  // Whether the peer died, left (shut down) or was refused: nothing will pass between us again.
  // False for a peer not heard of since it was last seen alive.
  virtual bool peer_failed(int peer) const = 0;
  // Connects to the peer unless a connection is made already, so that peer_failed() comes to
  // know whether it is gone (a refused or lost connection). Returns at once.
  virtual void probe_peer(int peer) = 0;

  // Flushes queued sends (until the deadline), says goodbye to every peer, stops threads and
  // closes sockets. Pending requests fail with kAborted. Idempotent.
  virtual void shutdown(std::chrono::steady_clock::time_point flush_deadline) = 0;
};

}  // namespace weft::transport
