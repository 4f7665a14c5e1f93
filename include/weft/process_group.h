// weft::ProcessGroup — a set of ranks that communicate: the public face of weft.
//
// Contract: every call checks its arguments and throws weft::Error(kInvalidArgument) before
// anything is sent. Blocking calls run on the caller's thread; i* calls return a Work.
// A ProcessGroup is thread-safe, but operations issued concurrently from several threads have
// no defined order among themselves: issue them from one thread when order matters.
// Every wait is bounded by timeout(): a stuck peer is reported by rank, never a silent hang.
// Point-to-point messages between two ranks with the same tag arrive in the order sent.
// Destroying the last handle shuts the group down: queued sends are flushed, peers are told
// goodbye, and no thread, socket or file is left behind.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "weft/buffer.h"
#include "weft/p2p_op.h"
#include "weft/work.h"

namespace weft {

namespace core {
class Communicator;
}

class ProcessGroup {
 public:
  explicit ProcessGroup(std::shared_ptr<core::Communicator> communicator);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const;
  int size() const;
  const std::string& name() const;
  std::chrono::milliseconds timeout() const;

  // --- point to point -------------------------------------------------------------------
  // The receiver's buffer must have the same dtype and count as the sender's.
  void send(ConstBufferView data, int dst, int tag = 0);
  // Returns the rank the message came from (useful with kAnySource).
  int recv(BufferView data, int src = kAnySource, int tag = 0);
  std::shared_ptr<Work> isend(ConstBufferView data, int dst, int tag = 0);
  std::shared_ptr<Work> irecv(BufferView data, int src = kAnySource, int tag = 0);
  // Posts every op (all receives first, so that pairs of ranks exchanging do not deadlock)
  // and returns one Work per op, in the order given.
  std::vector<std::shared_ptr<Work>> batch_isend_irecv(const std::vector<P2POp>& ops);

  // Fails every pending and future operation of this group on this rank and tells the peers,
  // whose pending operations of this group fail too.
  void abort(const std::string& reason);

  core::Communicator& communicator() { return *comm_; }

 private:
  std::shared_ptr<core::Communicator> comm_;
};

}  // namespace weft
