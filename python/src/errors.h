// weft::Error as Python exceptions: one class per weft::ErrorCode under one root, WeftError
// (a RuntimeError, as torch.distributed's own failures are). Classes that have a natural
// builtin counterpart subclass it too, so `except ValueError` or `except TimeoutError` work:
//
//   InvalidArgumentError(WeftError, ValueError)   MismatchError(WeftError)
//   TimeoutError(WeftError, builtins.TimeoutError) PeerFailureError(WeftError, ConnectionError)
//   UnauthorizedError(WeftError, PermissionError)  SystemCallError(WeftError, OSError)
//   AbortedError(WeftError)                        InternalError(WeftError)
//
// The message is weft's what() unchanged; the instance also carries code, message, the context
// fields (group, rank, size, op, seq, peer, peer_address, bytes) and root_cause (the text of the
// first failure when this one derives from it, else None).
// Functions here need the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <exception>

#include "weft/error.h"

namespace weft::python {

namespace py = pybind11;

// A new instance of the Python class for error.code(), attributes filled in.
py::object exception_object(const Error& error);
// The Python exception for any stored C++ exception (weft::Error or another std::exception).
py::object exception_object(std::exception_ptr error);
// Sets the Python error indicator for error (for the exception translator).
void set_python_error(const Error& error);
// Raises InvalidArgumentError (a ValueError) with message: for checks made by the bindings.
[[noreturn]] void throw_invalid_argument(const std::string& message);

}  // namespace weft::python
