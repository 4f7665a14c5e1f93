#include "buffers.h"

#include <cstdint>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "errors.h"
#include "writable_memory.h"

namespace weft::python {

namespace {

std::string type_name(py::handle object) {
  return py::str(py::type::handle_of(object).attr("__qualname__"));
}

std::string shape_text(const Py_buffer& b) {
  std::ostringstream out;
  out << "shape (";
  for (int i = 0; i < b.ndim; ++i) out << (i ? ", " : "") << (b.shape ? b.shape[i] : 0);
  out << "), strides (";
  for (int i = 0; i < b.ndim; ++i) out << (i ? ", " : "") << (b.strides ? b.strides[i] : 0);
  out << ")";
  return out.str();
}

// The dtype of a buffer-protocol format ("f", "<d", "=q", "?", "e", ...) of itemsize bytes.
std::optional<DType> dtype_of_format(std::string_view format, Py_ssize_t itemsize,
                                     std::string& problem) {
  if (!format.empty() && (format[0] == '>' || format[0] == '!')) {
    problem = "big-endian data";
    return std::nullopt;
  }
  if (!format.empty() && (format[0] == '@' || format[0] == '=' || format[0] == '<')) {
    format.remove_prefix(1);
  }
  if (format.size() != 1) {
    problem = "element format '" + std::string(format) + "'";
    return std::nullopt;
  }
  char c = format[0];
  switch (c) {
    case 'f':
      return DType::kFloat32;
    case 'd':
      return DType::kFloat64;
    case 'e':
      return DType::kFloat16;
    case '?':
      return DType::kBool;
    case 'b':
      return DType::kInt8;
    case 'B':
    case 'c':
      return DType::kUInt8;
    case 'h':
    case 'i':
    case 'l':
    case 'q':
    case 'n':
      switch (itemsize) {
        case 2:
          return DType::kInt16;
        case 4:
          return DType::kInt32;
        case 8:
          return DType::kInt64;
        default:
          break;
      }
      break;
    case 'H':
    case 'I':
    case 'L':
    case 'Q':
    case 'N':
      problem = "unsigned " + std::to_string(itemsize * 8) +
                "-bit integers (weft, like torch, has uint8 only)";
      return std::nullopt;
    default:
      break;
  }
  problem = "element format '" + std::string(format) + "'";
  return std::nullopt;
}

std::optional<DType> dtype_of_torch_name(std::string_view name) {
  if (name.rfind("torch.", 0) == 0) name.remove_prefix(6);
  static constexpr std::pair<std::string_view, DType> kNames[] = {
      {"float32", DType::kFloat32},   {"float64", DType::kFloat64}, {"float16", DType::kFloat16},
      {"bfloat16", DType::kBFloat16}, {"int8", DType::kInt8},       {"uint8", DType::kUInt8},
      {"int16", DType::kInt16},       {"int32", DType::kInt32},     {"int64", DType::kInt64},
      {"bool", DType::kBool}};
  for (auto [text, dtype] : kNames) {
    if (text == name) return dtype;
  }
  return std::nullopt;
}

// torch's dtype and layout objects are singletons: once each has been seen, a tensor's dtype
// and layout are told by identity, without formatting their names on every call. Used with the
// GIL held.
class TorchSingletons {
 public:
  std::optional<DType> dtype(py::handle dtype_object) {
    for (const auto& [known, dtype] : dtypes_) {
      if (known.ptr() == dtype_object.ptr()) return dtype;
    }
    auto dtype = dtype_of_torch_name(std::string(py::str(dtype_object)));
    dtypes_.emplace_back(py::reinterpret_borrow<py::object>(dtype_object), dtype);
    return dtype;
  }

  bool strided(py::handle layout_object) {
    if (strided_ && strided_.ptr() == layout_object.ptr()) return true;
    if (std::string(py::str(layout_object)) != "torch.strided") return false;
    strided_ = py::reinterpret_borrow<py::object>(layout_object);
    return true;
  }

 private:
  std::vector<std::pair<py::object, std::optional<DType>>> dtypes_;
  py::object strided_;
};

TorchSingletons& torch_singletons() {
  // Never destroyed: it holds Python objects, and Python may be gone at exit.
  static auto* singletons = new TorchSingletons();
  return *singletons;
}

bool on_cpu(py::handle tensor) {
  py::object is_cpu = py::getattr(tensor, "is_cpu", py::none());
  if (!is_cpu.is_none()) return is_cpu.cast<bool>();
  py::object device = tensor.attr("device");
  return !py::hasattr(device, "type") || std::string(py::str(device.attr("type"))) == "cpu";
}

std::string supported_dtypes() {
  return "float32, float64, float16, bfloat16 (torch), int8, uint8, int16, int32, int64, bool";
}

// Refuses a buffer weft would write into when this process cannot write its memory.
// describe() says what the argument is ("tensor of shape [4]"); called only then (it formats
// Python objects).
template <typename Describe>
void check_writable_memory(const void* data, std::size_t bytes, const std::string& what,
                           Describe&& describe) {
  if (probe_writable(data, bytes) != MemoryAccess::kNotWritable) return;
  std::ostringstream address;
  address << data;
  throw_invalid_argument(what + " (" + describe() + ", " + std::to_string(bytes) + " bytes at " +
                         address.str() +
                         ") lies in read-only memory (a read-only mapping, such as "
                         "torch.from_numpy(np.memmap(path, mode=\"r\")) or np.load(path, "
                         "mmap_mode=\"r\")), but weft writes the result into it in place: pass "
                         "a writable copy (t.clone(), a.copy())");
}

// weft._storage.pin, imported on first use. Never released: a Python object, and Python may be
// gone when static objects are destroyed.
py::handle storage_pin_function() {
  static PyObject* pin =
      py::object(py::module_::import("weft._storage").attr("pin")).release().ptr();
  return pin;
}

}  // namespace

HeldBuffer::HeldBuffer(py::handle object, bool writable, const std::string& what)
    : object_(py::reinterpret_borrow<py::object>(object)) {
  if (object.is_none()) throw py::type_error(what + " is None; expected an array or a tensor");
  if (PyObject_CheckBuffer(object.ptr())) {
    from_buffer_protocol(writable, what);
  } else if (py::hasattr(object, "data_ptr") && py::hasattr(object, "numel") &&
             py::hasattr(object, "dtype")) {
    from_tensor(writable, what);
  } else {
    throw py::type_error(what + " must be a numpy array, a torch CPU tensor or a buffer; got " +
                         type_name(object));
  }
}

void HeldBuffer::from_buffer_protocol(bool writable, const std::string& what) {
  Py_buffer& buffer = exported_.buffer;
  if (PyObject_GetBuffer(object_.ptr(), &buffer, PyBUF_RECORDS_RO) != 0) {
    throw py::error_already_set();
  }
  exported_.held = true;
  if (writable && buffer.readonly) {
    throw_invalid_argument(what + " (" + type_name(object_) +
                           ") is read-only, but weft writes the result into it in place: pass a "
                           "writable array (e.g. a.copy(), or np.array(..) rather than a view of "
                           "bytes)");
  }
  if (!PyBuffer_IsContiguous(&buffer, 'C')) {
    throw_invalid_argument(what + " (" + type_name(object_) + ", " + shape_text(buffer) +
                           ") is not contiguous: weft works in place on contiguous memory; pass "
                           "np.ascontiguousarray(a) and copy the result back");
  }
  std::string problem;
  auto dtype = dtype_of_format(buffer.format ? buffer.format : "B", buffer.itemsize, problem);
  if (!dtype) {
    throw_invalid_argument(what + " holds " + problem +
                           ", which weft does not support; supported: " + supported_dtypes());
  }
  dtype_ = *dtype;
  data_ = buffer.buf;
  count_ = buffer.itemsize > 0 ? static_cast<std::size_t>(buffer.len / buffer.itemsize) : 0;
  // A writable-looking buffer over a read-only mapping (mmap.mmap(..., prot=PROT_READ) exports
  // one): the flag says yes, the memory says no.
  if (writable) {
    check_writable_memory(data_, static_cast<std::size_t>(buffer.len), what,
                          [&] { return type_name(object_); });
  }
}

void HeldBuffer::from_tensor(bool writable, const std::string& what) {
  TorchSingletons& torch = torch_singletons();
  if (!on_cpu(object_)) {
    throw_invalid_argument(what + " is on device '" + std::string(py::str(object_.attr("device"))) +
                           "': weft works on CPU tensors; pass tensor.cpu() and copy back");
  }
  py::object layout = py::getattr(object_, "layout", py::none());
  if (!layout.is_none() && !torch.strided(layout)) {
    throw_invalid_argument(what + " has layout " + std::string(py::str(layout)) +
                           ": weft works on dense (torch.strided) tensors");
  }
  if (!object_.attr("is_contiguous")().cast<bool>()) {
    std::string shape = py::str(py::list(object_.attr("shape")));
    std::string strides = py::str(object_.attr("stride")());
    throw_invalid_argument(what + " (tensor of shape " + shape + ", strides " + strides +
                           ") is not contiguous: weft works in place on contiguous memory; pass "
                           "t.contiguous() and copy the result back");
  }
  py::object dtype_object = object_.attr("dtype");
  auto dtype = torch.dtype(dtype_object);
  if (!dtype) {
    throw_invalid_argument(what + " has dtype " + std::string(py::str(dtype_object)) +
                           ", which weft does not support; supported: " + supported_dtypes());
  }
  dtype_ = *dtype;
  count_ = object_.attr("numel")().cast<std::size_t>();
  data_ = reinterpret_cast<void*>(object_.attr("data_ptr")().cast<std::uintptr_t>());
  is_tensor_ = true;
  if (writable) {
    check_writable_memory(data_, count_ * size_of(dtype_), what, [&] {
      return "tensor of shape " + std::string(py::str(py::list(object_.attr("shape"))));
    });
  }
}

HeldBuffer::~HeldBuffer() { release_pin(); }

void HeldBuffer::keep_in_place() {
  if (!is_tensor_ || pin_) return;
  pin_ = py::reinterpret_borrow<py::object>(storage_pin_function())(object_);
}

void HeldBuffer::release_pin() {
  if (!pin_ || pin_released_) return;
  pin_released_ = true;  // the pin object, and the storage it holds, stay until destruction
  try {
    pin_.attr("release")();
  } catch (py::error_already_set& error) {
    error.discard_as_unraisable("weft: releasing a tensor's storage pin");
  }
}

BufferView hold_writable(HeldBuffers& held, py::handle object, const std::string& what) {
  held.push_back(std::make_unique<HeldBuffer>(object, /*writable=*/true, what));
  return held.back()->view();
}

ConstBufferView hold_readable(HeldBuffers& held, py::handle object, const std::string& what) {
  held.push_back(std::make_unique<HeldBuffer>(object, /*writable=*/false, what));
  return held.back()->const_view();
}

void keep_in_place(HeldBuffers& held) {
  for (auto& buffer : held) buffer->keep_in_place();
}

void release_pins(HeldBuffers& held) {
  for (auto& buffer : held) buffer->release_pin();
}

}  // namespace weft::python
