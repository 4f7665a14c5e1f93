// The pieces of the extension module weft._weft, one file each; module.cc calls them in order.
//
// Contract: every binding that may block releases the GIL while it waits and, where it waits
// for a peer, waits in slices so that Ctrl-C interrupts it (see blocking_wait.h).
#pragma once

#include <pybind11/pybind11.h>

namespace weft::python {

namespace py = pybind11;

void register_errors(py::module_& m);
void register_reduce_op(py::module_& m);
void register_work(py::module_& m);
void register_stores(py::module_& m);
void register_process_group(py::module_& m);

}  // namespace weft::python
