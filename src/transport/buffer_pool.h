// BufferPool — recycles the buffers that hold messages which arrive before their receive is
// posted, so that steady-state traffic allocates nothing. Buffers are kept per power-of-two
// size class, a few per class. Thread-safe.
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

  BufferPool();

  // A buffer of at least `bytes`; `capacity` receives its real size. Throws std::bad_alloc
  // when there is no such buffer: more than kLargestBuffer, or out of memory.
  Buffer take(std::size_t bytes, std::size_t& capacity);
  void give_back(Buffer buffer, std::size_t capacity);

 private:
  static constexpr std::size_t kKeepPerClass = 4;
  static constexpr std::size_t kLargestKept = std::size_t{64} << 20;

  util::Mutex mutex_;
  std::vector<Buffer> free_[kClasses] WEFT_GUARDED_BY(mutex_);
};

}  // namespace weft::transport
