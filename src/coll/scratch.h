// Scratch — a collective's temporary bytes, left uninitialized.
//
// Every byte of an algorithm's scratch is written (received or reduced into) before it is read,
// so zeroing it, as std::vector does, is pure cost: for a small message that cost can exceed the
// whole transfer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace weft::coll {

class Scratch {
 public:
  Scratch() = default;
  explicit Scratch(std::size_t bytes)
      : bytes_(bytes), data_(bytes ? std::make_unique_for_overwrite<uint8_t[]>(bytes) : nullptr) {}

  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  std::size_t size() const { return bytes_; }

 private:
  std::size_t bytes_ = 0;
  std::unique_ptr<uint8_t[]> data_;
};

}  // namespace weft::coll
