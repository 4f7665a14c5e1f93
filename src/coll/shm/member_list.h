// MemberList — one value per member of a group, kept on the stack for groups of up to
// kOnStack members: an allocation is a visible part of a small collective's cost.
#pragma once

#include <cstddef>
#include <vector>

namespace weft::coll {

template <typename T>
class MemberList {
 public:
  explicit MemberList(int members, T value = T{})
      : heap_(members > kOnStack ? members : 0, value),
        items_(members > kOnStack ? heap_.data() : stack_) {
    for (int m = 0; m < members && m < kOnStack; ++m) stack_[m] = value;
  }
  MemberList(const MemberList&) = delete;
  MemberList& operator=(const MemberList&) = delete;

  T& operator[](int m) { return items_[m]; }
  const T& operator[](int m) const { return items_[m]; }
  T* data() { return items_; }
  const T* data() const { return items_; }

 private:
  static constexpr int kOnStack = 16;
  // Left uninitialized: the constructor fills the entries in use, and zeroing all of them
  // (a rep stos) showed up in a 2-rank 8 B reduce's profile.
  T stack_[kOnStack];
  std::vector<T> heap_;
  T* items_;
};

}  // namespace weft::coll
