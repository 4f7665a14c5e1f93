// CommandRunner — what the TCP store server does with one request, apart from sockets: decodes
// it (store_protocol.h), applies it to the table, and returns either the reply or, for a get,
// wait or multi_get whose keys are missing, the parked request to answer later.
//
// Replies are bounded as requests are: a reply over max_frame_bytes is an error reply, never
// built. A malformed request or one the table refuses is an error reply; it never throws.
// Not thread-safe: the server's event loop owns it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "store/key_value_table.h"
#include "store/store_protocol.h"

namespace weft::store {

struct Reply {
  Status status = Status::kOk;
  std::vector<uint8_t> body;  // after the status byte
};

// A request waiting for keys to appear.
struct Parked {
  Command command;
  std::vector<std::string> keys;
  std::chrono::steady_clock::time_point deadline;
};

class CommandRunner {
 public:
  explicit CommandRunner(std::size_t max_frame_bytes) : max_frame_(max_frame_bytes) {}

  // Runs the request in body[0, size).
  std::variant<Reply, Parked> run(const uint8_t* body, std::size_t size);

  bool ready(const Parked& parked) const { return table_.contains_all(parked.keys); }
  // The reply to a parked request whose keys are all present now.
  Reply answer(const Parked& parked) const;
  // The reply to a parked request whose deadline passed: names the missing keys.
  Reply timed_out(const Parked& parked) const;

  // True once after a request changed the table (parked requests may be ready).
  bool take_mutated() {
    bool mutated = mutated_;
    mutated_ = false;
    return mutated;
  }

  static Reply error(const std::string& message);

 private:
  std::variant<Reply, Parked> execute(util::ByteReader& reader);
  Reply build_answer(const Parked& parked) const;

  std::size_t max_frame_;
  KeyValueTable table_;
  bool mutated_ = false;
};

}  // namespace weft::store
