// Python objects seen as weft buffers, in place and without a copy.
//
// Accepted: anything with the buffer protocol (numpy arrays, bytearray, memoryview, array.array)
// and torch CPU tensors. Tensors are read through their own attributes (data_ptr(), numel(),
// dtype, device, layout, is_contiguous()) so this module never imports torch, and bfloat16,
// which numpy lacks, works. A non-contiguous buffer, a read-only one where weft must write,
// a non-CPU tensor or an unsupported dtype is an InvalidArgumentError (a ValueError) naming the
// argument and the problem; an object of another kind is a TypeError.
//
// Ownership: a HeldBuffer keeps the Python object (and, for the buffer protocol, its exported
// Py_buffer) alive until it is destroyed, so memory cannot move or be freed while an operation
// uses it. Create and destroy HeldBuffers with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "weft/buffer.h"

namespace weft::python {

namespace py = pybind11;

class HeldBuffer {
 public:
  // writable: weft writes into the buffer (receive side, in-place results).
  HeldBuffer(py::handle object, bool writable, const std::string& what);
  ~HeldBuffer() = default;
  HeldBuffer(const HeldBuffer&) = delete;
  HeldBuffer& operator=(const HeldBuffer&) = delete;

  BufferView view() const { return {data_, count_, dtype_}; }
  ConstBufferView const_view() const { return {data_, count_, dtype_}; }

 private:
  void from_buffer_protocol(bool writable, const std::string& what);
  void from_tensor(const std::string& what);

  // Releases the exported Py_buffer, also when the constructor throws after exporting it.
  struct Exported {
    Py_buffer buffer{};
    bool held = false;
    ~Exported() {
      if (held) PyBuffer_Release(&buffer);
    }
  };

  py::object object_;
  Exported exported_;
  void* data_ = nullptr;
  std::size_t count_ = 0;
  DType dtype_ = DType::kUInt8;
};

// The buffers one operation uses; moved into its Work so they outlive the operation.
using HeldBuffers = std::vector<std::unique_ptr<HeldBuffer>>;

// Adds a buffer to held and returns its view.
BufferView hold_writable(HeldBuffers& held, py::handle object, const std::string& what);
ConstBufferView hold_readable(HeldBuffers& held, py::handle object, const std::string& what);

}  // namespace weft::python
