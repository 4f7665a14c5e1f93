#include "util/block_recycler.h"

#include <algorithm>
#include <new>

namespace weft::util {

namespace {
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kRecycle = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kRecycle = false;
#else
constexpr bool kRecycle = true;
#endif
#else
constexpr bool kRecycle = true;
#endif
}  // namespace

BlockRecycler::BlockRecycler(std::size_t block_bytes, std::size_t keep, std::size_t ready)
    : block_bytes_(block_bytes), keep_(kRecycle ? keep : 0) {
  MutexLock lock(mutex_);
  blocks_.reserve(keep_);
  while (blocks_.size() < std::min(ready, keep_)) blocks_.push_back(::operator new(block_bytes_));
}

void* BlockRecycler::take() {
  {
    MutexLock lock(mutex_);
    if (!blocks_.empty()) {
      void* block = blocks_.back();
      blocks_.pop_back();
      return block;
    }
  }
  return ::operator new(block_bytes_);
}

void BlockRecycler::give(void* block) {
  {
    MutexLock lock(mutex_);
    if (blocks_.size() < keep_) {
      blocks_.push_back(block);
      return;
    }
  }
  ::operator delete(block);
}

std::size_t BlockRecycler::kept() const {
  MutexLock lock(mutex_);
  return blocks_.size();
}

}  // namespace weft::util
