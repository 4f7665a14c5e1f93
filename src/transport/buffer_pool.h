// BufferPool — recycles the buffers that hold messages which arrive before their receive is
// posted, so that steady-state traffic allocates nothing. Buffers are kept per power-of-two
// size class: as many per class as the owner asks bytes for, within bounds. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "util/mutex.h"

namespace weft::transport {

class BufferPool {
 public:
  using Buffer = std::unique_ptr<uint8_t[]>;

  static constexpr int kClasses = 48;
  // The largest buffer it hands out (its largest size class).
  static constexpr std::size_t kLargestBuffer = std::size_t{1} << (kClasses - 1);

  // Each size class keeps up to `keep_bytes` of its buffers for reuse (at least kMinKeep and at
  // most kMaxKeep of them). The Router keeps what one sender's early messages may hold at once:
  // a sender that runs that far ahead (the root of back-to-back broadcasts, a pipeline's
  // segments) reuses the same buffers instead of faulting fresh pages in for every message.
  explicit BufferPool(std::size_t keep_bytes = 0);

  // A buffer of at least `bytes`; `capacity` receives its real size. Throws std::bad_alloc
  // when there is no such buffer: more than kLargestBuffer, or out of memory.
  Buffer take(std::size_t bytes, std::size_t& capacity);
  void give_back(Buffer buffer, std::size_t capacity);
  // How many buffers that would hold `bytes` it keeps now, ready to be taken.
  std::size_t kept_for(std::size_t bytes);

 private:
  static constexpr std::size_t kMinKeep = 4;
  static constexpr std::size_t kMaxKeep = 64;
  static constexpr std::size_t kLargestKept = std::size_t{64} << 20;

  // How many buffers a size class keeps.
  std::size_t keep_of(int size_class) const;

  const std::size_t keep_bytes_;

  util::Mutex mutex_;
  std::vector<Buffer> free_[kClasses] WEFT_GUARDED_BY(mutex_);
};

}  // namespace weft::transport
