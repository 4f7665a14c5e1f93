#include "transport/buffer_pool.h"

#include <algorithm>
#include <bit>
#include <new>

namespace weft::transport {

static int class_of(std::size_t bytes) {
  return bytes <= 64 ? 6 : static_cast<int>(std::bit_width(bytes - 1));
}

BufferPool::BufferPool(std::size_t keep_bytes) : keep_bytes_(keep_bytes) {
  // Each class's list at its full length from the start: giving a buffer back never allocates.
  util::MutexLock lock(mutex_);
  for (int size_class = 0; size_class < kClasses; ++size_class) {
    free_[size_class].reserve(keep_of(size_class));
  }
}

std::size_t BufferPool::keep_of(int size_class) const {
  return std::clamp(keep_bytes_ >> size_class, kMinKeep, kMaxKeep);
}

BufferPool::Buffer BufferPool::take(std::size_t bytes, std::size_t& capacity) {
  // Beyond the last class the index would leave free_: a length from the wire must not do that.
  if (bytes > kLargestBuffer) throw std::bad_alloc();
  int size_class = class_of(bytes);
  capacity = std::size_t{1} << size_class;
  {
    util::MutexLock lock(mutex_);
    auto& list = free_[size_class];
    if (!list.empty()) {
      Buffer buffer = std::move(list.back());
      list.pop_back();
      return buffer;
    }
  }
  return Buffer(new uint8_t[capacity]);
}

std::size_t BufferPool::kept_for(std::size_t bytes) {
  if (bytes > kLargestBuffer) return 0;
  util::MutexLock lock(mutex_);
  return free_[class_of(bytes)].size();
}

void BufferPool::give_back(Buffer buffer, std::size_t capacity) {
  if (!buffer || capacity > kLargestKept) return;
  int size_class = class_of(capacity);
  util::MutexLock lock(mutex_);
  auto& list = free_[size_class];
  if (list.size() < keep_of(size_class)) list.push_back(std::move(buffer));
}

}  // namespace weft::transport
