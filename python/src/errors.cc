#include "errors.h"

#include <array>
#include <string>

#include "bindings.h"

namespace weft::python {

namespace {

constexpr int kNumCodes = static_cast<int>(ErrorCode::kInternal) + 1;

struct ExceptionClass {
  ErrorCode code;
  const char* name;
  PyObject* builtin;  // the extra builtin base, or null
  const char* doc;
};

// Filled by register_errors; the classes live as long as the module (never freed).
PyObject* g_root = nullptr;
std::array<PyObject*, kNumCodes> g_classes{};

PyObject* class_of(ErrorCode code) {
  auto index = static_cast<std::size_t>(code);
  return index < g_classes.size() && g_classes[index] ? g_classes[index] : g_root;
}

py::object none_if(bool empty, py::object value) { return empty ? py::none() : value; }

}  // namespace

py::object exception_object(const Error& error) {
  py::object cls = py::reinterpret_borrow<py::object>(class_of(error.code()));
  py::object instance = cls(py::str(error.what()));
  const ErrorContext& c = error.context();
  instance.attr("code") = py::str(to_string(error.code()));
  instance.attr("message") = py::str(error.message());
  instance.attr("group") = none_if(c.group.empty(), py::str(c.group));
  instance.attr("rank") = none_if(c.rank < 0, py::int_(c.rank));
  instance.attr("size") = none_if(c.size < 0, py::int_(c.size));
  instance.attr("op") = none_if(c.op.empty(), py::str(c.op));
  instance.attr("seq") = none_if(c.seq < 0, py::int_(c.seq));
  instance.attr("peer") = none_if(c.peer < 0, py::int_(c.peer));
  instance.attr("peer_address") = none_if(c.peer_address.empty(), py::str(c.peer_address));
  instance.attr("bytes") = none_if(c.bytes < 0, py::int_(c.bytes));
  const Error& root = error.root_cause();
  instance.attr("root_cause") = none_if(&root == &error, py::str(root.what()));
  return instance;
}

py::object exception_object(std::exception_ptr error) {
  if (!error) return py::none();
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return exception_object(e);
  } catch (const std::exception& e) {
    return py::reinterpret_borrow<py::object>(PyExc_RuntimeError)(py::str(e.what()));
  } catch (...) {
    return py::reinterpret_borrow<py::object>(PyExc_RuntimeError)(py::str("unknown C++ exception"));
  }
}

void set_python_error(const Error& error) {
  py::object instance = exception_object(error);
  PyErr_SetObject(class_of(error.code()), instance.ptr());
}

void throw_invalid_argument(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

void register_errors(py::module_& m) {
  g_root = PyErr_NewExceptionWithDoc(
      "weft._weft.WeftError",
      "Root of weft's exceptions (a RuntimeError). Attributes: code, message, group, rank, size, "
      "op, seq, peer, peer_address, bytes, root_cause.",
      PyExc_RuntimeError, nullptr);
  if (!g_root) throw py::error_already_set();
  m.attr("WeftError") = py::reinterpret_borrow<py::object>(g_root);

  const ExceptionClass classes[] = {
      {ErrorCode::kInvalidArgument, "InvalidArgumentError", PyExc_ValueError,
       "An argument is unusable; nothing was sent."},
      {ErrorCode::kMismatch, "MismatchError", nullptr,
       "Ranks disagree about the operation they are running."},
      {ErrorCode::kTimeout, "TimeoutError", PyExc_TimeoutError,
       "A deadline passed while waiting for a peer or the store."},
      {ErrorCode::kPeerFailure, "PeerFailureError", PyExc_ConnectionError,
       "A peer process died, closed its connection or shut down."},
      {ErrorCode::kUnauthorized, "UnauthorizedError", PyExc_PermissionError,
       "A connection was refused: the job token did not match."},
      {ErrorCode::kSystem, "SystemCallError", PyExc_OSError, "An operating-system call failed."},
      {ErrorCode::kAborted, "AbortedError", nullptr,
       "The group was aborted (by the user, by Ctrl-C or after an earlier failure)."},
      {ErrorCode::kInternal, "InternalError", nullptr, "A bug in weft."},
  };
  for (const ExceptionClass& c : classes) {
    py::tuple bases = c.builtin ? py::make_tuple(py::handle(g_root), py::handle(c.builtin))
                                : py::make_tuple(py::handle(g_root));
    std::string qualified = std::string("weft._weft.") + c.name;
    PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), c.doc, bases.ptr(), nullptr);
    if (!cls) throw py::error_already_set();
    g_classes[static_cast<std::size_t>(c.code)] = cls;
    m.attr(c.name) = py::reinterpret_borrow<py::object>(cls);
  }

  py::register_exception_translator([](std::exception_ptr p) {
    if (!p) return;
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      set_python_error(e);
    }
  });
}

}  // namespace weft::python
