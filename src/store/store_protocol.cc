#include "store/store_protocol.h"

#include "weft/error.h"

namespace weft::store {

std::vector<uint8_t> frame(const std::vector<uint8_t>& body) {
  std::vector<uint8_t> out;
  out.reserve(body.size() + kFrameHeaderBytes);
  util::ByteWriter writer(out);
  writer.put<uint32_t>(static_cast<uint32_t>(body.size()));
  writer.put_bytes(body.data(), body.size());
  return out;
}

std::vector<std::string> read_keys(util::ByteReader& reader) {
  uint32_t count = reader.get<uint32_t>();
  // Each key takes at least its 4-byte length: refuse counts the frame cannot hold before
  // reserving anything.
  if (count > reader.remaining() / 4) {
    throw Error(ErrorCode::kInvalidArgument,
                "malformed request: " + std::to_string(count) + " keys announced");
  }
  std::vector<std::string> keys;
  keys.reserve(count);
  for (uint32_t i = 0; i < count; ++i) keys.push_back(reader.get_string());
  return keys;
}

void write_keys(util::ByteWriter& writer, const std::vector<std::string>& keys) {
  writer.put<uint32_t>(static_cast<uint32_t>(keys.size()));
  for (const std::string& key : keys) writer.put_string(key);
}

}  // namespace weft::store
