// ByteQueue — one connection's buffered input or output: bytes appended at the back and
// consumed from the front, for the store server's event loop.
//
// Consuming advances an offset; the consumed prefix is dropped only once it is at least as
// large as what remains, so each byte is moved at most once on average and a buffer holding
// many small pipelined frames is handled in linear time (erasing the front of a vector per
// frame is quadratic in the bytes buffered). Storage grown past `keep_capacity` is released
// when the queue empties, so a connection that once sent or received one large frame does not
// pin that memory for the rest of its life. Not thread-safe: the event loop owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace weft::store {

class ByteQueue {
 public:
  explicit ByteQueue(std::size_t keep_capacity) : keep_capacity_(keep_capacity) {}

  const uint8_t* data() const { return bytes_.data() + start_; }
  std::size_t size() const { return bytes_.size() - start_; }
  bool empty() const { return size() == 0; }

  void append(const void* data, std::size_t size) {
    const auto* first = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), first, first + size);
  }

  // Drops the first `count` bytes (count <= size()).
  void consume(std::size_t count) {
    start_ += count;
    if (start_ == bytes_.size()) {
      clear();
    } else if (start_ >= kCompactFrom && start_ >= bytes_.size() - start_) {
      bytes_.erase(bytes_.begin(), bytes_.begin() + static_cast<std::ptrdiff_t>(start_));
      start_ = 0;
    }
  }

  void clear() {
    start_ = 0;
    if (bytes_.capacity() > keep_capacity_) {
      std::vector<uint8_t>().swap(bytes_);
    } else {
      bytes_.clear();
    }
  }

 private:
  // Below this, a consumed prefix costs less to keep than to move.
  static constexpr std::size_t kCompactFrom = 4096;

  std::vector<uint8_t> bytes_;
  std::size_t start_ = 0;  // bytes_[0, start_) are consumed
  std::size_t keep_capacity_;
};

}  // namespace weft::store
