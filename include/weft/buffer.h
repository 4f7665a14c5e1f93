// Non-owning views of user data: pointer + element count + dtype.
//
// Contract: a view never owns or copies; the caller keeps the memory alive and untouched until
// the operation using it has completed (Work::wait returned). BufferView is writable (receive
// side); ConstBufferView is read-only (send side) and every BufferView converts to it.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "weft/dtype.h"
#include "weft/export.h"

namespace weft {

class WEFT_API ConstBufferView {
 public:
  ConstBufferView() = default;
  ConstBufferView(const void* data, std::size_t count, DType dtype)
      : data_(data), count_(count), dtype_(dtype) {}
  template <typename T>
  ConstBufferView(std::span<const T> s) : ConstBufferView(s.data(), s.size(), dtype_of<T>()) {}
  template <typename T>
  ConstBufferView(std::span<T> s) : ConstBufferView(s.data(), s.size(), dtype_of<T>()) {}
  template <typename T>
  ConstBufferView(const std::vector<T>& v) : ConstBufferView(v.data(), v.size(), dtype_of<T>()) {}

  const void* data() const { return data_; }
  std::size_t count() const { return count_; }
  DType dtype() const { return dtype_; }
  std::size_t bytes() const { return count_ * size_of(dtype_); }

 private:
  const void* data_ = nullptr;
  std::size_t count_ = 0;
  DType dtype_ = DType::kUInt8;
};

class WEFT_API BufferView {
 public:
  BufferView() = default;
  BufferView(void* data, std::size_t count, DType dtype)
      : data_(data), count_(count), dtype_(dtype) {}
  template <typename T>
  BufferView(std::span<T> s) : BufferView(s.data(), s.size(), dtype_of<T>()) {}
  template <typename T>
  BufferView(std::vector<T>& v) : BufferView(v.data(), v.size(), dtype_of<T>()) {}

  void* data() const { return data_; }
  std::size_t count() const { return count_; }
  DType dtype() const { return dtype_; }
  std::size_t bytes() const { return count_ * size_of(dtype_); }
  operator ConstBufferView() const { return {data_, count_, dtype_}; }

 private:
  void* data_ = nullptr;
  std::size_t count_ = 0;
  DType dtype_ = DType::kUInt8;
};

}  // namespace weft
