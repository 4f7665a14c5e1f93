#include "weft/error.h"

#include <sstream>

namespace weft {

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kMismatch:
      return "mismatch";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kPeerFailure:
      return "peer_failure";
    case ErrorCode::kUnauthorized:
      return "unauthorized";
    case ErrorCode::kSystem:
      return "system";
    case ErrorCode::kAborted:
      return "aborted";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string ErrorContext::render() const {
  std::ostringstream out;
  auto field = [&out, first = true](const char* name) mutable -> std::ostringstream& {
    out << (first ? " [" : " ") << name << '=';
    first = false;
    return out;
  };
  if (!group.empty()) field("group") << group;
  if (rank >= 0) field("rank") << rank << '/' << size;
  if (!op.empty()) field("op") << op;
  if (seq >= 0) field("seq") << seq;
  if (peer >= 0 || !peer_address.empty()) {
    field("peer");
    if (peer >= 0) out << peer;
    if (!peer_address.empty()) out << '@' << peer_address;
  }
  if (bytes >= 0) field("bytes") << bytes;
  std::string text = out.str();
  if (!text.empty()) text += ']';
  return text;
}

static std::string render(ErrorCode code, const std::string& message, const ErrorContext& context,
                          const Error* root) {
  std::string text = std::string("weft ") + to_string(code) + ": " + message + context.render();
  if (root) text += "; root cause: " + std::string(root->what());
  return text;
}

Error::Error(ErrorCode code, std::string message, ErrorContext context,
             std::shared_ptr<const Error> root_cause)
    : std::runtime_error(render(code, message, context, root_cause.get())),
      code_(code),
      message_(std::move(message)),
      context_(std::move(context)),
      root_(root_cause ? (root_cause->root_ ? root_cause->root_ : root_cause) : nullptr) {}

Error Error::with_context(const ErrorContext& outer) const {
  ErrorContext merged = context_;
  if (merged.group.empty()) merged.group = outer.group;
  if (merged.rank < 0) {
    merged.rank = outer.rank;
    merged.size = outer.size;
  }
  if (merged.op.empty()) merged.op = outer.op;
  if (merged.seq < 0) merged.seq = outer.seq;
  if (merged.peer < 0) merged.peer = outer.peer;
  if (merged.peer_address.empty()) merged.peer_address = outer.peer_address;
  if (merged.bytes < 0) merged.bytes = outer.bytes;
  return Error(code_, message_, merged, root_);
}

}  // namespace weft
