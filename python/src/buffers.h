// Python objects seen as weft buffers, in place and without a copy.
//
// Accepted: anything with the buffer protocol (numpy arrays, bytearray, memoryview, array.array)
// and torch CPU tensors. Tensors are read through their own attributes (data_ptr(), numel(),
// dtype, device, layout, is_contiguous()) so this module never imports torch, and bfloat16,
// which numpy lacks, works. A non-contiguous buffer, a read-only one where weft must write,
// a non-CPU tensor or an unsupported dtype is an InvalidArgumentError (a ValueError) naming the
// argument and the problem; an object of another kind is a TypeError.
//
// Read-only memory: the buffer protocol's readonly flag refuses a read-only array (numpy's
// writeable=False) where weft writes; a tensor has no such flag, so its memory is probed
// (writable_memory.h): a tensor over a read-only mapping (torch.from_numpy of
// np.memmap(mode="r")) is refused instead of killing the process. A tensor over heap memory
// that only its numpy owner calls read-only cannot be told apart (torch keeps no reachable link
// to the array; torch.from_numpy warns about it).
//
// Ownership: a HeldBuffer keeps the Python object (and, for the buffer protocol, its exported
// Py_buffer) alive until it is destroyed. For an operation that outlives the call (async_op,
// isend/irecv, an interrupted wait), keep_in_place() also holds a torch tensor's storage, so
// that t.set_(...) or dropping t cannot free the memory, and pins it against reallocation, so
// that growing t (t.resize_) or freeing its storage (storage.resize_(0)) fails with torch's
// "not resizable" error instead of freeing memory weft still writes or reads. release_pin()
// ends the pin (the storage stays held): call it once the operation is known to be over.
// weft/_storage.py says how each torch version is pinned. Create and destroy HeldBuffers, and
// call these, with the GIL held.
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
  ~HeldBuffer();
  HeldBuffer(const HeldBuffer&) = delete;
  HeldBuffer& operator=(const HeldBuffer&) = delete;

  BufferView view() const { return {data_, count_, dtype_}; }
  ConstBufferView const_view() const { return {data_, count_, dtype_}; }

  // For a torch tensor: holds its storage and pins it until release_pin(). No-op otherwise, and
  // when already done.
  void keep_in_place();
  void release_pin();

 private:
  void from_buffer_protocol(bool writable, const std::string& what);
  void from_tensor(bool writable, const std::string& what);

  // Releases the exported Py_buffer, also when the constructor throws after exporting it.
  struct Exported {
    Py_buffer buffer{};
    bool held = false;
    ~Exported() {
      if (held) PyBuffer_Release(&buffer);
    }
  };

  py::object object_;
  bool is_tensor_ = false;
  py::object pin_;  // weft._storage's pin of the tensor's storage (holds it), or null
  bool pin_released_ = false;
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

// keep_in_place() / release_pin() on each buffer.
void keep_in_place(HeldBuffers& held);
void release_pins(HeldBuffers& held);

}  // namespace weft::python
