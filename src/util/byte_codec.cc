#include "util/byte_codec.h"

#include "weft/error.h"

namespace weft::util {

void ByteWriter::put_bytes(const void* data, std::size_t size) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  out_.insert(out_.end(), p, p + size);
}

void ByteWriter::put_blob(const void* data, std::size_t size) {
  put<uint32_t>(static_cast<uint32_t>(size));
  put_bytes(data, size);
}

const uint8_t* ByteReader::take(std::size_t count) {
  if (count > size_ - offset_) {
    throw Error(ErrorCode::kInvalidArgument, "truncated message: wanted " + std::to_string(count) +
                                                 " more bytes, " + std::to_string(size_ - offset_) +
                                                 " left");
  }
  const uint8_t* p = data_ + offset_;
  offset_ += count;
  return p;
}

std::vector<uint8_t> ByteReader::get_blob() {
  uint32_t size = get<uint32_t>();
  const uint8_t* p = take(size);
  return std::vector<uint8_t>(p, p + size);
}

std::string ByteReader::get_string() {
  uint32_t size = get<uint32_t>();
  const uint8_t* p = take(size);
  return std::string(reinterpret_cast<const char*>(p), size);
}

}  // namespace weft::util
