// The store server's request handling (store/command_runner.h over store_protocol.h) on one
// client's arbitrary byte stream, without sockets: the stream is cut into frames as the server
// cuts it (u32 length, then the body; a length over the limit ends the stream), and each body is
// run against one in-memory table; parked requests are answered or timed out as the server
// would. Properties: no crash, no read past a frame, every reply within the frame limit.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <variant>
#include <vector>

#include "seeds.h"
#include "store/command_runner.h"
#include "store/store_protocol.h"
#include "util/byte_codec.h"

namespace {

using weft::fuzz::Bytes;
using namespace weft::store;

// Small, so that the limit itself is reached by the fuzzer.
constexpr std::size_t kMaxFrame = 4096;

void check_reply(const Reply& reply) {
  if (reply.body.size() + 1 > kMaxFrame) std::abort();
}

Bytes request(Command command, const std::vector<std::string>& strings,
              const std::vector<uint64_t>& numbers = {}) {
  Bytes body;
  weft::util::ByteWriter writer(body);
  writer.put<uint8_t>(static_cast<uint8_t>(command));
  for (const std::string& text : strings) writer.put_string(text);
  for (uint64_t number : numbers) writer.put<uint64_t>(number);
  return frame(body);
}

Bytes keys_request(Command command, const std::vector<std::string>& keys,
                   const std::vector<uint64_t>& numbers = {}) {
  Bytes body;
  weft::util::ByteWriter writer(body);
  writer.put<uint8_t>(static_cast<uint8_t>(command));
  write_keys(writer, keys);
  for (uint64_t number : numbers) writer.put<uint64_t>(number);
  return frame(body);
}

std::vector<Bytes> seeds() {
  Bytes session;
  weft::fuzz::append(session, request(Command::kSet, {"a", "1"}));
  weft::fuzz::append(session, request(Command::kGet, {"a"}, {100}));
  weft::fuzz::append(session, request(Command::kAdd, {"n"}, {5}));
  weft::fuzz::append(session, request(Command::kCompareSet, {"a", "1", "2"}));
  weft::fuzz::append(session, keys_request(Command::kCheck, {"a", "b"}));
  weft::fuzz::append(session, request(Command::kNumKeys, {}));
  weft::fuzz::append(session, keys_request(Command::kWait, {"a"}, {10}));
  weft::fuzz::append(session, keys_request(Command::kMultiGet, {"a", "n"}, {10}));
  weft::fuzz::append(session, request(Command::kDelete, {"a"}));
  weft::fuzz::append(session, request(Command::kPing, {}));
  Bytes multi_set;
  weft::util::ByteWriter writer(multi_set);
  writer.put<uint8_t>(static_cast<uint8_t>(Command::kMultiSet));
  writer.put<uint32_t>(2);
  for (const char* key : {"x", "y"}) {
    writer.put_string(key);
    writer.put_string("value");
  }
  return {session, frame(multi_set), request(Command::kGet, {"missing"}, {0})};
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  weft::fuzz::write_seeds_if_asked(seeds());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  CommandRunner runner(kMaxFrame);
  std::vector<Parked> parked;
  std::size_t at = 0;
  while (size - at >= kFrameHeaderBytes) {
    uint32_t length;
    std::memcpy(&length, data + at, sizeof length);
    at += kFrameHeaderBytes;
    if (length > kMaxFrame || length > size - at) break;  // refused, or truncated: the end
    Bytes body(data + at, data + at + length);            // exact size: ASan sees a read past it
    at += length;
    auto outcome = runner.run(body.data(), body.size());
    if (auto* reply = std::get_if<Reply>(&outcome)) {
      check_reply(*reply);
    } else {
      parked.push_back(std::get<Parked>(std::move(outcome)));
    }
    if (runner.take_mutated()) {
      for (auto it = parked.begin(); it != parked.end();) {
        if (!runner.ready(*it)) {
          ++it;
          continue;
        }
        check_reply(runner.answer(*it));
        it = parked.erase(it);
      }
    }
  }
  for (const Parked& waiting : parked) check_reply(runner.timed_out(waiting));
  return 0;
}
