// BlockRecycler — keeps freed blocks of one size for the next allocation of that size, and
// RecyclingAllocator, an allocator (for std::allocate_shared) that takes its blocks from one.
//
// An object made and dropped once per message (a transport request) would otherwise cost a
// trip to the heap each time, whose cost depends on whatever else the process allocates (the
// framework around us, its other threads); a recycled block's does not. A recycler keeps up
// to `keep` blocks; past that it frees them, so a burst leaves no more than that behind.
// Under AddressSanitizer it keeps nothing: every block goes back to the heap, so a use after
// free is still caught.
// Thread-safety: take and give may be called from any thread.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "util/mutex.h"

namespace weft::util {

class BlockRecycler {
 public:
  // Starts with `ready` blocks (at most `keep`), so that the first ones in use at once, however
  // many a warm-up happened to need, cost no allocation later.
  BlockRecycler(std::size_t block_bytes, std::size_t keep, std::size_t ready = 0);
  BlockRecycler(const BlockRecycler&) = delete;
  BlockRecycler& operator=(const BlockRecycler&) = delete;

  // A kept block, or a new one of block_bytes.
  void* take();
  // Keeps the block (from take) while fewer than `keep` are kept; frees it otherwise.
  void give(void* block);
  std::size_t kept() const;

 private:
  const std::size_t block_bytes_;
  const std::size_t keep_;
  mutable Mutex mutex_;
  std::vector<void*> blocks_ WEFT_GUARDED_BY(mutex_);
};

// Allocates single objects of T from a recycler of its own (one per T, made on first use and
// never destroyed, so that an object dropped during exit still has somewhere to go); arrays
// come from the heap.
template <class T, std::size_t kKeep = 1024, std::size_t kReady = 64>
struct RecyclingAllocator {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = RecyclingAllocator<U, kKeep, kReady>;
  };

  RecyclingAllocator() = default;
  template <class U>
  RecyclingAllocator(const RecyclingAllocator<U, kKeep, kReady>&) {
  }  // NOLINT: converting, as std's

  T* allocate(std::size_t n) {
    if (n != 1) return std::allocator<T>().allocate(n);
    return static_cast<T*>(recycler().take());
  }
  void deallocate(T* p, std::size_t n) {
    if (n != 1) {
      std::allocator<T>().deallocate(p, n);
      return;
    }
    recycler().give(p);
  }
  static BlockRecycler& recycler() {
    static_assert(alignof(T) <= alignof(std::max_align_t), "the recycler's blocks are new's");
    static BlockRecycler* const instance = new BlockRecycler(sizeof(T), kKeep, kReady);
    return *instance;
  }

  template <class U>
  bool operator==(const RecyclingAllocator<U, kKeep, kReady>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const RecyclingAllocator<U, kKeep, kReady>&) const {
    return false;
  }
};

}  // namespace weft::util
