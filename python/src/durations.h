// Python time spans as std::chrono: datetime.timedelta (torch's way) or a number of seconds.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <optional>

namespace weft::python {

namespace py = pybind11;

// None -> nullopt; timedelta or seconds (int, float) -> milliseconds, rounded up so that a tiny
// positive span never becomes 0. A negative span is an InvalidArgumentError naming what.
std::optional<std::chrono::milliseconds> optional_milliseconds(py::handle value, const char* what);
// As optional_milliseconds, None meaning 0 ("the default").
std::chrono::milliseconds milliseconds_or_zero(py::handle value, const char* what);
// A timedelta for Python.
py::object to_timedelta(std::chrono::milliseconds span);

}  // namespace weft::python
