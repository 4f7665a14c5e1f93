// Little-endian encoding of integers and length-prefixed strings, for weft's wire protocols.
//
// ByteWriter appends to a vector; ByteReader reads from a span and throws
// weft::Error(kInvalidArgument, "truncated ...") instead of reading past the end, so that a
// malformed frame from a stranger is an error, never an out-of-bounds read.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace weft::util {

class ByteWriter {
 public:
  explicit ByteWriter(std::vector<uint8_t>& out) : out_(out) {}

  template <typename T>
  void put(T value) {
    static_assert(std::is_integral_v<T>);
    uint8_t raw[sizeof(T)];
    std::memcpy(raw, &value, sizeof(T));  // x86 and arm64 are little-endian
    out_.insert(out_.end(), raw, raw + sizeof(T));
  }
  void put_bytes(const void* data, std::size_t size);
  // u32 length, then the bytes.
  void put_blob(const void* data, std::size_t size);
  void put_string(const std::string& text) { put_blob(text.data(), text.size()); }
  void put_blob(const std::vector<uint8_t>& blob) { put_blob(blob.data(), blob.size()); }

 private:
  std::vector<uint8_t>& out_;
};

class ByteReader {
 public:
  ByteReader(const uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  template <typename T>
  T get() {
    static_assert(std::is_integral_v<T>);
    T value;
    std::memcpy(&value, take(sizeof(T)), sizeof(T));
    return value;
  }
  std::vector<uint8_t> get_blob();
  std::string get_string();
  std::size_t remaining() const { return size_ - offset_; }

 private:
  const uint8_t* take(std::size_t count);

  const uint8_t* data_;
  std::size_t size_;
  std::size_t offset_ = 0;
};

}  // namespace weft::util
