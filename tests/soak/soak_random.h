// The soak's randomness: one shared stream that every rank draws identically, and a hash that
// turns (seed, step, rank, stream, index) into an element value any rank can recompute.
//
// std::mt19937_64's output is fixed by the standard; the std::uniform_*_distribution mappings
// are not (libstdc++ and libc++ differ), so the mapping onto ranges is written here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace weft::soak {

// splitmix64's finalizer: a bijection that spreads every input bit over the output.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A key naming one buffer: every rank derives the same key for rank `rank`'s buffer.
inline uint64_t buffer_key(uint64_t seed, uint64_t step, int rank, uint64_t stream) {
  uint64_t k = mix64(seed);
  k = mix64(k ^ step);
  k = mix64(k ^ static_cast<uint64_t>(rank + 1));
  return mix64(k ^ (stream * 0x632be59bd9b4e019ULL));
}

// The bits of element `index` of the buffer named by `key`.
inline uint64_t element_bits(uint64_t key, std::size_t index) {
  return mix64(key ^ (static_cast<uint64_t>(index) * 0xd6e8feb86659fd93ULL));
}

class SoakRandom {
 public:
  explicit SoakRandom(uint64_t seed) : engine_(seed) {}

  uint64_t bits() { return engine_(); }
  // Uniform in [0, n) by multiply-and-shift; n > 0. The bias (n / 2^64) is irrelevant here.
  uint64_t below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(engine_()) * n) >> 64);
  }
  // Uniform in [lo, hi].
  int64_t between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo) + 1));
  }
  // True with probability percent / 100.
  bool percent(unsigned percent) { return below(100) < percent; }
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[below(items.size())];
  }
  // A permutation of 0..n-1 (Fisher-Yates with this stream's mapping).
  std::vector<int> permutation(int n) {
    std::vector<int> order(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
    for (int i = n - 1; i > 0; --i) {
      std::swap(order[static_cast<std::size_t>(i)], order[below(static_cast<uint64_t>(i) + 1)]);
    }
    return order;
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace weft::soak
