// Scratch — a collective's temporary bytes, left uninitialized.
//
// Every byte of an algorithm's scratch is written (received or reduced into) before it is read,
// so zeroing it, as std::vector does, is pure cost: for a small message that cost can exceed the
// whole transfer. A small scratch lives inside the object: a small collective then runs without
// the heap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace weft::coll {

class Scratch {
 public:
  static constexpr std::size_t kInlineBytes = 256;

  Scratch() = default;
  explicit Scratch(std::size_t bytes) : bytes_(bytes) {
    if (bytes > kInlineBytes) heap_ = std::make_unique_for_overwrite<uint8_t[]>(bytes);
  }
  Scratch(Scratch&& other) noexcept { take(other); }
  Scratch& operator=(Scratch&& other) noexcept {
    if (this != &other) take(other);
    return *this;
  }

  uint8_t* data() { return bytes_ == 0 ? nullptr : heap_ ? heap_.get() : inline_; }
  const uint8_t* data() const { return bytes_ == 0 ? nullptr : heap_ ? heap_.get() : inline_; }
  std::size_t size() const { return bytes_; }

 private:
  void take(Scratch& other) {
    bytes_ = other.bytes_;
    heap_ = std::move(other.heap_);
    if (!heap_ && bytes_ != 0) std::memcpy(inline_, other.inline_, bytes_);
    other.bytes_ = 0;
  }

  std::size_t bytes_ = 0;
  std::unique_ptr<uint8_t[]> heap_;
  alignas(std::max_align_t) uint8_t inline_[kInlineBytes];
};

}  // namespace weft::coll
