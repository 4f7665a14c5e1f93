#include "durations.h"

#include <cmath>
#include <string>

#include "errors.h"

namespace weft::python {

std::optional<std::chrono::milliseconds> optional_milliseconds(py::handle value, const char* what) {
  if (value.is_none()) return std::nullopt;
  double seconds = 0;
  if (py::hasattr(value, "total_seconds")) {
    seconds = value.attr("total_seconds")().cast<double>();
  } else if (PyFloat_Check(value.ptr()) || PyLong_Check(value.ptr())) {
    seconds = value.cast<double>();
  } else {
    throw py::type_error(std::string(what) + " must be a datetime.timedelta or seconds, not " +
                         std::string(py::str(py::type::handle_of(value).attr("__qualname__"))));
  }
  if (!(seconds >= 0) || !std::isfinite(seconds)) {
    throw_invalid_argument(std::string(what) + " must be a finite span >= 0, got " +
                           std::to_string(seconds) + " s");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000.0)));
}

std::chrono::milliseconds milliseconds_or_zero(py::handle value, const char* what) {
  return optional_milliseconds(value, what).value_or(std::chrono::milliseconds(0));
}

py::object to_timedelta(std::chrono::milliseconds span) {
  py::object timedelta = py::module_::import("datetime").attr("timedelta");
  return timedelta(py::arg("milliseconds") = span.count());
}

}  // namespace weft::python
