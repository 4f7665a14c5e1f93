// RecordFault — what is wrong with a value read from shared memory that another process writes:
// the field, the value found and the bound it broke. Decoders of shared-memory records return
// one instead of throwing, so the fast path builds no text; the text is made only when a peer
// is failed for it.
#pragma once

#include <cstdint>
#include <string>

namespace weft::transport {

struct RecordFault {
  const char* field = nullptr;  // null: nothing is wrong
  uint64_t value = 0;
  const char* rule = "";  // how the value must relate to the limit: "at most", "exactly", ...
  uint64_t limit = 0;

  explicit operator bool() const { return field != nullptr; }
  // "record length 9000 (at most 4088)".
  std::string to_string() const {
    return std::string(field) + " " + std::to_string(value) + " (" + rule + " " +
           std::to_string(limit) + ")";
  }
};

inline RecordFault record_fault(const char* field, uint64_t value, const char* rule,
                                uint64_t limit) {
  return RecordFault{field, value, rule, limit};
}

}  // namespace weft::transport
