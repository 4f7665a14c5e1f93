// weft::Error — the one exception type weft throws.
//
// Contract: every failure surfaces as weft::Error (or a subclass) carrying an ErrorCode and an
// ErrorContext. what() renders code, message and context on one line, e.g.
//   weft timeout: no message from peer [group=default rank=1/4 op=recv seq=- peer=0@10.0.0.1:4242
//   bytes=1024]
// When one failure fails a whole group, derived errors keep the root cause in root_cause().
// Error objects are immutable and safe to copy between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "weft/export.h"

namespace weft {

enum class ErrorCode : uint8_t {
  kInvalidArgument,  // the caller passed something unusable; nothing was sent
  kMismatch,         // ranks disagree about the operation they are running
  kTimeout,          // a deadline passed while waiting for a peer or the store
  kPeerFailure,      // a peer process died, closed its connection or shut down
  kUnauthorized,     // a connection was refused because the job token did not match
  kSystem,           // an operating-system call failed
  kAborted,          // the group was aborted (by the user or after an earlier failure)
  kInternal,         // a bug in weft
};

// Stable lower-case name of a code ("timeout", "peer_failure", ...).
WEFT_API const char* to_string(ErrorCode code);

// Where an error happened. Unknown fields stay at their defaults and are not rendered.
struct WEFT_API ErrorContext {
  std::string group;         // group name, "default" for the world group
  int rank = -1;             // my rank in that group
  int size = -1;             // group size
  std::string op;            // "recv", "all_reduce", "store.get", ...
  int64_t seq = -1;          // the group's sequence number of the op
  int peer = -1;             // the peer's rank in the group
  std::string peer_address;  // host:port of the peer
  int64_t bytes = -1;        // bytes the op moves

  // " [group=.. rank=r/n op=.. seq=.. peer=p@addr bytes=..]" or "" when empty.
  std::string render() const;
};

class WEFT_API Error : public std::runtime_error {
 public:
  Error(ErrorCode code, std::string message, ErrorContext context = {},
        std::shared_ptr<const Error> root_cause = nullptr);

  ErrorCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  const ErrorContext& context() const noexcept { return context_; }
  // The first failure this one derives from (itself when it is the first).
  const Error& root_cause() const noexcept { return root_ ? *root_ : *this; }
  // The first failure this one derives from, or null when it is the first.
  const std::shared_ptr<const Error>& earlier_cause() const noexcept { return root_; }

  // A copy with the context filled in where this error's context is still empty.
  Error with_context(const ErrorContext& outer) const;

 private:
  ErrorCode code_;
  std::string message_;
  ErrorContext context_;
  std::shared_ptr<const Error> root_;
};

}  // namespace weft
