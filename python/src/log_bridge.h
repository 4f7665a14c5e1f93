// weft's log lines handed to Python's logging (weft.enable_python_logging,
// python/weft/__init__.py).
#pragma once

#include <pybind11/pybind11.h>

namespace weft::python {

void register_log_bridge(pybind11::module_& m);

}  // namespace weft::python
