#include "store/command_runner.h"

#include <algorithm>
#include <new>

#include "weft/error.h"

namespace weft::store {

Reply CommandRunner::error(const std::string& message) {
  Reply reply{Status::kError, {}};
  util::ByteWriter(reply.body).put_string(message);
  return reply;
}

std::variant<Reply, Parked> CommandRunner::run(const uint8_t* body, std::size_t size) {
  try {
    util::ByteReader reader(body, size);
    std::variant<Reply, Parked> outcome = execute(reader);
    if (reader.remaining() != 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "malformed request: " + std::to_string(reader.remaining()) +
                      " unexpected trailing bytes");
    }
    return outcome;
  } catch (const Error& e) {
    return error(e.message());
  } catch (const std::bad_alloc&) {
    // This client's request alone fails; the server and its other clients go on.
    return error("the store server ran out of memory for this request");
  }
}

std::variant<Reply, Parked> CommandRunner::execute(util::ByteReader& reader) {
  Reply ok;
  util::ByteWriter out(ok.body);
  auto command = static_cast<Command>(reader.get<uint8_t>());
  switch (command) {
    case Command::kSet: {
      std::string key = reader.get_string();
      table_.set(key, reader.get_blob());
      mutated_ = true;
      return ok;
    }
    case Command::kAdd: {
      std::string key = reader.get_string();
      out.put<int64_t>(table_.add(key, reader.get<int64_t>()));
      mutated_ = true;
      return ok;
    }
    case Command::kCompareSet: {
      std::string key = reader.get_string();
      Bytes expected = reader.get_blob();
      Bytes desired = reader.get_blob();
      out.put_blob(table_.compare_set(key, expected, desired));
      mutated_ = true;
      return ok;
    }
    case Command::kDelete:
      out.put<uint8_t>(table_.erase(reader.get_string()) ? 1 : 0);
      return ok;
    case Command::kCheck:
      out.put<uint8_t>(table_.contains_all(read_keys(reader)) ? 1 : 0);
      return ok;
    case Command::kNumKeys:
      out.put<int64_t>(table_.size());
      return ok;
    case Command::kPing:
      return ok;
    case Command::kAuthHello:
    case Command::kAuthProof:
      // A server with a token handles these before any request reaches the table.
      throw Error(ErrorCode::kInvalidArgument,
                  "this store server does not authenticate its clients (it has no job token), "
                  "or this connection is authenticated already");
    case Command::kMultiSet: {
      uint32_t count = reader.get<uint32_t>();
      if (count > reader.remaining() / 8) {
        throw Error(ErrorCode::kInvalidArgument,
                    "malformed request: " + std::to_string(count) + " pairs announced");
      }
      for (uint32_t i = 0; i < count; ++i) {
        std::string key = reader.get_string();
        table_.set(key, reader.get_blob());
      }
      mutated_ = true;
      return ok;
    }
    case Command::kGet:
    case Command::kWait:
    case Command::kMultiGet: {
      std::vector<std::string> keys;
      if (command == Command::kGet)
        keys.push_back(reader.get_string());
      else
        keys = read_keys(reader);
      uint64_t timeout_ms = reader.get<uint64_t>();
      Parked parked{command, std::move(keys),
                    std::chrono::steady_clock::now() + std::chrono::milliseconds(std::min<uint64_t>(
                                                           timeout_ms, 365ull * 86'400'000))};
      if (ready(parked)) return answer(parked);
      return parked;
    }
  }
  throw Error(ErrorCode::kInvalidArgument,
              "unknown command " + std::to_string(static_cast<int>(command)));
}

Reply CommandRunner::answer(const Parked& parked) const {
  try {
    return build_answer(parked);
  } catch (const std::bad_alloc&) {
    return error("the store server ran out of memory for this reply");
  }
}

Reply CommandRunner::build_answer(const Parked& parked) const {
  // A reply is bounded as a request is: a multi_get naming one large key many times would
  // otherwise make the server allocate many times what the client sent.
  std::size_t bytes = 0;
  for (const std::string& key : parked.keys) bytes += table_.find(key)->size() + 4;
  if (parked.command != Command::kWait && bytes > max_frame_) {
    return error("the reply would be " + std::to_string(bytes) +
                 " bytes, over the store's limit of " + std::to_string(max_frame_) + " bytes");
  }
  Reply ok;
  util::ByteWriter out(ok.body);
  if (parked.command == Command::kGet) out.put_blob(*table_.find(parked.keys[0]));
  if (parked.command == Command::kMultiGet) {
    out.put<uint32_t>(static_cast<uint32_t>(parked.keys.size()));
    for (const std::string& key : parked.keys) out.put_blob(*table_.find(key));
  }
  return ok;
}

Reply CommandRunner::timed_out(const Parked& parked) const {
  Reply reply{Status::kTimeout, {}};
  util::ByteWriter(reply.body).put_string(table_.missing(parked.keys));
  return reply;
}

}  // namespace weft::store
