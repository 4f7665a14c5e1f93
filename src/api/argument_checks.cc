#include "api/argument_checks.h"

namespace weft::api {

static ErrorContext context_of(const core::Communicator& comm, const char* op) {
  return comm.context_for(core::OpInfo{op});
}

void check_peer(const core::Communicator& comm, int peer, const char* op, bool any_allowed) {
  if (any_allowed && peer == core::kAnyPeer) return;
  if (peer < 0 || peer >= comm.size()) {
    throw Error(ErrorCode::kInvalidArgument,
                "invalid peer rank " + std::to_string(peer) + ": the group has ranks 0.." +
                    std::to_string(comm.size() - 1),
                context_of(comm, op));
  }
}

void invalid_buffer(const core::Communicator& comm, const void* data, std::size_t count,
                    const char* op, const char* what) {
  if (data == nullptr && count > 0) {
    throw Error(
        ErrorCode::kInvalidArgument,
        std::string(what) + " is a null pointer with " + std::to_string(count) + " elements",
        context_of(comm, op));
  }
  throw Error(ErrorCode::kInvalidArgument,
              std::string(what) + " has an invalid element count " +
                  std::to_string(static_cast<int64_t>(count)),
              context_of(comm, op));
}

void check_tag(const core::Communicator& comm, int tag, const char* op) {
  if (tag < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "invalid tag " + std::to_string(tag) + ": tags are >= 0", context_of(comm, op));
  }
}

}  // namespace weft::api
