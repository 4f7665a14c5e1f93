// MemberList — one value per member of a group, kept inline for groups of up to kInline
// members: an allocation is a visible part of a small collective's cost. Copies and moves keep
// their own storage, so a list can travel in a queued collective's body.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace weft::coll {

template <typename T>
class MemberList {
 public:
  explicit MemberList(int members, T value = T{}) : members_(members) {
    if (members > kInline) {
      fill_heap(value);
      return;
    }
    for (int m = 0; m < members; ++m) inline_[m] = value;
  }
  MemberList(const MemberList& other) : members_(other.members_), heap_(other.heap_) {
    copy_inline(other);
  }
  MemberList(MemberList&& other) noexcept
      : members_(other.members_), heap_(std::move(other.heap_)) {
    copy_inline(other);
    other.members_ = 0;  // its heap entries moved here
  }
  MemberList& operator=(const MemberList& other) {
    if (this != &other) {
      members_ = other.members_;
      heap_ = other.heap_;
      copy_inline(other);
    }
    return *this;
  }
  MemberList& operator=(MemberList&& other) noexcept {
    if (this != &other) {
      members_ = other.members_;
      heap_ = std::move(other.heap_);
      copy_inline(other);
      other.members_ = 0;
    }
    return *this;
  }

  T& operator[](int m) { return data()[m]; }
  const T& operator[](int m) const { return data()[m]; }
  T* data() { return members_ > kInline ? heap_.data() : inline_; }
  const T* data() const { return members_ > kInline ? heap_.data() : inline_; }
  std::size_t size() const { return static_cast<std::size_t>(members_); }
  T* begin() { return data(); }
  T* end() { return data() + members_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + members_; }
  operator std::span<const T>() const { return {data(), size()}; }

 private:
  static constexpr int kInline = 16;
  // Out of line: the inline constructor stays small enough to be inlined into every caller.
  [[gnu::noinline]] void fill_heap(T value) { heap_.assign(members_, value); }
  void copy_inline(const MemberList& other) {
    if (members_ > kInline) return;  // the entries are in heap_
    for (int m = 0; m < members_; ++m) inline_[m] = other.inline_[m];
  }

  int members_;
  // Left uninitialized: the constructor fills the entries in use, and zeroing all of them
  // would cost a small call more than the entries it uses.
  T inline_[kInline];
  std::vector<T> heap_;
};

// Where each of `members` blocks of `block` bytes starts when they lie one after the other in
// rank order (an even call's lists, for the algorithms that take lists).
inline MemberList<std::size_t> back_to_back_offsets(int members, std::size_t block) {
  MemberList<std::size_t> offsets(members);
  for (int m = 0; m < members; ++m) offsets[m] = static_cast<std::size_t>(m) * block;
  return offsets;
}

}  // namespace weft::coll
