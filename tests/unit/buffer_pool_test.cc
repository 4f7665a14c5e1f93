#include "transport/buffer_pool.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace weft::transport {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// Takes `count` buffers of `bytes` at once and gives them all back: how many the pool keeps.
std::size_t kept_after_a_burst(BufferPool& pool, std::size_t bytes, std::size_t count) {
  std::vector<BufferPool::Buffer> held;
  std::vector<std::size_t> capacities(count);
  for (std::size_t i = 0; i < count; ++i) {
    held.push_back(pool.take(bytes, capacities[i]));
    EXPECT_GE(capacities[i], bytes);
  }
  for (std::size_t i = 0; i < count; ++i) pool.give_back(std::move(held[i]), capacities[i]);
  return pool.kept_for(bytes);
}

TEST(BufferPool, AClassKeepsAsManyBuffersAsItsBytesCover) {
  BufferPool pool(8 * kMiB);
  EXPECT_EQ(kept_after_a_burst(pool, kMiB, 8), 8u);
  // The next burst takes those 8 and 4 new ones; the 4 beyond what it keeps are freed.
  EXPECT_EQ(kept_after_a_burst(pool, kMiB, 12), 8u);
  EXPECT_EQ(pool.kept_for(2 * kMiB), 0u);  // another class
}

TEST(BufferPool, EveryClassKeepsAFewAndNoneKeepsWithoutBound) {
  BufferPool pool;  // nothing asked: the few every class keeps
  EXPECT_EQ(kept_after_a_burst(pool, kMiB, 8), 4u);
  BufferPool large(8 * kMiB);
  // 8 MiB of 4 MiB buffers is 2: a class keeps 4 all the same.
  EXPECT_EQ(kept_after_a_burst(large, 4 * kMiB, 6), 4u);
  // 8 MiB of 64-byte buffers would be 131,072: a class keeps 64 at most.
  EXPECT_EQ(kept_after_a_burst(large, 64, 100), 64u);
  // Beyond 64 MiB nothing is kept.
  EXPECT_EQ(kept_after_a_burst(large, 65 * kMiB, 1), 0u);
}

TEST(BufferPool, AKeptBufferIsHandedOutAgainForAnySizeOfItsClass) {
  BufferPool pool(8 * kMiB);
  std::size_t capacity = 0;
  auto buffer = pool.take(kMiB - 100, capacity);
  EXPECT_EQ(capacity, kMiB);
  pool.give_back(std::move(buffer), capacity);
  EXPECT_EQ(pool.kept_for(kMiB / 2 + 1), 1u);
  std::size_t again = 0;
  auto same = pool.take(kMiB / 2 + 1, again);
  EXPECT_EQ(again, kMiB);
  EXPECT_EQ(pool.kept_for(kMiB), 0u);
}

TEST(BufferPool, ALengthBeyondTheLargestClassIsRefused) {
  BufferPool pool;
  std::size_t capacity = 0;
  EXPECT_THROW(pool.take(BufferPool::kLargestBuffer + 1, capacity), std::bad_alloc);
}

}  // namespace
}  // namespace weft::transport
