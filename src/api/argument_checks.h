// Argument checks shared by the public calls: each throws weft::Error(kInvalidArgument) with
// the group's context before anything is sent.
#pragma once

#include <string>

#include "core/communicator.h"
#include "weft/buffer.h"

namespace weft::api {

void check_peer(const core::Communicator& comm, int peer, const char* op, bool any_allowed);

// Throws the error that check_buffer found: out of line, so that the check itself stays a few
// instructions (every call checks its buffers, and a small collective's whole path counts).
[[noreturn, gnu::cold]] void invalid_buffer(const core::Communicator& comm, const void* data,
                                            std::size_t count, const char* op, const char* what);

inline void check_buffer(const core::Communicator& comm, const void* data, std::size_t count,
                         const char* op, const char* what) {
  // A count this large is a negative number cast to size_t.
  if ((data == nullptr && count > 0) || count > (std::size_t{1} << 62)) [[unlikely]] {
    invalid_buffer(comm, data, count, op, what);
  }
}
void check_tag(const core::Communicator& comm, int tag, const char* op);

}  // namespace weft::api
