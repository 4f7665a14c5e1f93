// Streamed arrivals — what a path that reads payloads in place as they stream in (TCP) and
// the Router say to each other, beyond what every path does (path.h).
//
// Such a path learns a message's header before its payload: the Router says where the payload
// goes (the matching receive's own buffer, or a buffer of ours), or that it stays in the socket
// for now ("parked": a large one nobody waits for, or any once its sender holds enough of our
// memory), and the path later asks where it goes after all. A receive being filled mid-payload
// is detached by the path when it is cancelled.
#pragma once

#include <memory>

#include "transport/frame_header.h"
#include "transport/path.h"
#include "transport/request.h"
#include "weft/error.h"

namespace weft::transport {

struct UnexpectedMessage;

// Where the payload of a message that starts arriving now goes (begin_arrival).
struct Arrival {
  RequestPtr receive;                       // its receive: read into receive->data
  UnexpectedMessage* unexpected = nullptr;  // nobody waits yet: read into unexpected->buffer
  bool no_room = false;                     // nobody waits and no buffer that large could be had
  // Nobody waits, and the payload is to stay in the socket for now: `unexpected` has no buffer
  // (resume_arrival says when and where to read it).
  bool parked = false;
  // None of them set: the payload is read and dropped (its receive expected something else,
  // and has failed with kMismatch).
};

// What such a path tells the Router, besides PathEvents; thread-safe, under the same rules.
class StreamedArrivalEvents : public PathEvents {
 public:
  // A message whose payload will be read in place as it comes. With `may_park` (the path can
  // leave the payload in its socket), a message that nobody waits for, while no receive from
  // its sender is posted either, is parked when it is large (2 MiB or more): its receive,
  // usually posted moments later, then takes the payload straight into its own buffer, with no
  // copy through a buffer of ours. So is any such message once its sender's earlier ones that
  // nobody took hold 8 MiB of ours: a peer that runs ahead waits for us instead of growing our
  // memory.
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
};

// The path's side: Path::streamed_receiver(). Thread-safe.
class StreamedReceiver {
 public:
  virtual ~StreamedReceiver() = default;
  // A receive this path is filling right now (its payload streaming in) is detached and
  // failed; false when it fills no such receive.
  virtual bool detach_receive(Request& request, const std::shared_ptr<const Error>& reason) = 0;
  // A parked message of this path is wanted: a receive claimed it, or wants it out of the way.
  // The path resumes it soon even when no thread polls it.
  virtual void parked_message_wanted() = 0;
};

}  // namespace weft::transport
