// InlineVector — a vector of at most N elements that lives where it is declared: for the short
// lists a collective builds on every call (a tree's children, the requests of one round), which
// a heap allocation each would cost more than the list is worth.
//
// Thread-safety: a value type, as std::array.
#pragma once

#include <array>
#include <cstddef>
#include <utility>

#include "weft/error.h"

namespace weft::util {

template <class T, std::size_t N>
class InlineVector {
 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  void push_back(T value) {
    // A list longer than its bound is a bug in the caller's arithmetic, not a runtime condition.
    if (size_ == N) throw Error(ErrorCode::kInternal, "InlineVector: more than its capacity");
    items_[size_++] = std::move(value);
  }
  void clear() {
    for (std::size_t i = 0; i < size_; ++i) items_[i] = T{};
    size_ = 0;
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t i) { return items_[i]; }
  const T& operator[](std::size_t i) const { return items_[i]; }
  iterator begin() { return items_.data(); }
  iterator end() { return items_.data() + size_; }
  const_iterator begin() const { return items_.data(); }
  const_iterator end() const { return items_.data() + size_; }
  T* data() { return items_.data(); }
  const T* data() const { return items_.data(); }

 private:
  std::array<T, N> items_{};
  std::size_t size_ = 0;
};

}  // namespace weft::util
