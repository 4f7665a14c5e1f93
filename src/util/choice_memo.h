// ChoiceMemo — remembers small answers to a pure question (a key of up to 55 bits gives a
// value of 8 bits), so that a caller asking the same question on every call pays for the
// answer once.
//
// Direct-mapped, lock-free: each slot is one atomic word holding its key and value together, so
// a reader sees a whole entry or none. Two keys that share a slot evict each other: a miss costs
// only asking again. Relaxed ordering is enough, since the answer depends on the key alone:
// whichever thread stores it, the value is the same. Safe from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>

namespace weft::util {

class ChoiceMemo {
 public:
  static constexpr int kKeyBits = 55;
  static constexpr uint64_t kMaxKey = (uint64_t{1} << kKeyBits) - 1;

  // The value remembered for `key`, if any. Keys above kMaxKey are never remembered.
  std::optional<uint8_t> find(uint64_t key) const {
    if (key > kMaxKey) return std::nullopt;
    const uint64_t entry = slot(key).load(std::memory_order_relaxed);
    if (entry != encode(key, static_cast<uint8_t>(entry))) return std::nullopt;
    return static_cast<uint8_t>(entry);
  }

  void remember(uint64_t key, uint8_t value) {
    if (key > kMaxKey) return;
    slot(key).store(encode(key, value), std::memory_order_relaxed);
  }

 private:
  static constexpr int kSlots = 64;
  static constexpr uint64_t kFilled = uint64_t{1} << 63;  // an empty slot (0) matches no key

  static uint64_t encode(uint64_t key, uint8_t value) { return kFilled | key << 8 | value; }
  std::atomic<uint64_t>& slot(uint64_t key) const {
    // Fibonacci hashing: neighbouring sizes (and kinds) spread over the slots.
    return slots_[(key * 0x9E3779B97F4A7C15ull) >> 58];
  }

  mutable std::array<std::atomic<uint64_t>, kSlots> slots_{};
};

}  // namespace weft::util
