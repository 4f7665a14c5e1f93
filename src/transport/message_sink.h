// MessageSink — where a message that arrived by some path (a shared-memory ring, a send to
// oneself) meets the receives posted for it. One sink serves every path of a process, so
// receives from anyone, the order of messages per sender and tag, and mismatch detection work
// the same whichever path a message took.
#pragma once

#include <functional>
#include <memory>

#include "transport/frame_header.h"
#include "weft/error.h"

namespace weft::transport {

// Copies the payload to `destination` (room for header.bytes); returns null, or why it could
// not (the receive then fails with that error).
using PayloadFill = std::function<std::shared_ptr<const Error>(void* destination)>;

class MessageSink {
 public:
  virtual ~MessageSink() = default;
  // Matches a whole message (header.kind is kData) with a posted receive, or keeps it for a
  // later one. Calls fill at most once, before returning; not at all when the message is
  // dropped (its receive expected something else: that receive fails with kMismatch).
  virtual void deliver(const FrameHeader& header, const PayloadFill& fill) = 0;
  // `sender` wrote what no weft rank writes (a broken record in shared memory): nothing more
  // will be read from it, so it is failed as if it had died, with `error` naming what it wrote.
  // Call with no lock of the path held: failing a peer calls back into every path.
  virtual void fail_sender(int sender, std::shared_ptr<const Error> error) = 0;
};

}  // namespace weft::transport
