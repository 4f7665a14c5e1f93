// Argument checks shared by the public calls: each throws weft::Error(kInvalidArgument) with
// the group's context before anything is sent.
#pragma once

#include <string>

#include "core/communicator.h"
#include "weft/buffer.h"

namespace weft::api {

void check_peer(const core::Communicator& comm, int peer, const char* op, bool any_allowed);
void check_buffer(const core::Communicator& comm, const void* data, std::size_t count,
                  const char* op, const char* what);
void check_tag(const core::Communicator& comm, int tag, const char* op);

}  // namespace weft::api
