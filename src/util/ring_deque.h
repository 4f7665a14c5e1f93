// RingDeque — a double-ended queue in one circular array that keeps its capacity.
//
// std::deque allocates a block whenever its front crosses a block boundary, so a queue that is
// pushed and popped one element at a time allocates every few elements, forever. A ring that
// only grows (doubling) allocates while it finds its working size, then never again.
// An element leaves its slot as a default-constructed T: what it owned is released when it is
// popped, not when the slot is reused.
// Not thread-safe; the owner locks.
#pragma once

#include <cstddef>
#include <iterator>
#include <utility>
#include <vector>

namespace weft::util {

template <class T>
class RingDeque {
 public:
  template <class Deque, class Value>
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = Value*;
    using reference = Value&;

    Iterator(Deque* deque, std::size_t index) : deque_(deque), index_(index) {}
    reference operator*() const { return (*deque_)[index_]; }
    pointer operator->() const { return &(*deque_)[index_]; }
    Iterator& operator++() {
      ++index_;
      return *this;
    }
    bool operator==(const Iterator& other) const { return index_ == other.index_; }
    bool operator!=(const Iterator& other) const { return index_ != other.index_; }
    std::size_t index() const { return index_; }

   private:
    Deque* deque_;
    std::size_t index_;  // from the front
  };
  using iterator = Iterator<RingDeque, T>;
  using const_iterator = Iterator<const RingDeque, const T>;

  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return slots_.size(); }

  T& operator[](std::size_t i) { return slots_[slot_of(i)]; }
  const T& operator[](std::size_t i) const { return slots_[slot_of(i)]; }
  T& front() { return (*this)[0]; }
  const T& front() const { return (*this)[0]; }

  iterator begin() { return {this, 0}; }
  iterator end() { return {this, size_}; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }

  void push_back(T value) {
    make_room();
    slots_[slot_of(size_)] = std::move(value);
    ++size_;
  }
  void push_front(T value) {
    make_room();
    head_ = (head_ + slots_.size() - 1) & mask();
    slots_[head_] = std::move(value);
    ++size_;
  }
  void pop_front() {
    slots_[head_] = T{};
    head_ = (head_ + 1) & mask();
    --size_;
  }
  // Removes one element; the ones behind it move up. Returns the element now at its place.
  iterator erase(iterator position) {
    for (std::size_t i = position.index(); i + 1 < size_; ++i)
      (*this)[i] = std::move((*this)[i + 1]);
    (*this)[size_ - 1] = T{};
    --size_;
    return position;
  }
  void clear() {
    while (!empty()) pop_front();
    head_ = 0;
  }

 private:
  std::size_t mask() const { return slots_.size() - 1; }
  std::size_t slot_of(std::size_t i) const { return (head_ + i) & mask(); }
  void make_room() {
    if (size_ < slots_.size()) return;
    std::vector<T> larger(slots_.empty() ? kFirstCapacity : 2 * slots_.size());
    for (std::size_t i = 0; i < size_; ++i) larger[i] = std::move((*this)[i]);
    slots_ = std::move(larger);
    head_ = 0;
  }

  static constexpr std::size_t kFirstCapacity = 8;  // a power of two, as every capacity after
  std::vector<T> slots_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace weft::util
