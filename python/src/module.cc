// weft._weft — the compiled half of the Python package. The torch.distributed-shaped API lives
// in python/weft/distributed.py on top of these bindings; this module speaks group ranks only.
#include "bindings.h"
#include "log_bridge.h"
#include "weft/dtype.h"
#include "weft/version.h"

namespace weft::python {

PYBIND11_MODULE(_weft, m) {
  m.doc() = "weft: collective communication between CPU processes (compiled core)";
  m.attr("__version__") = version();
  m.attr("ANY_SOURCE") = -1;
  py::list dtypes;
  for (int i = 0; i < kNumDTypes; ++i) dtypes.append(std::string(name_of(static_cast<DType>(i))));
  m.attr("DTYPES") = dtypes;

  register_errors(m);
  register_reduce_op(m);
  register_work(m);
  register_stores(m);
  register_process_group(m);
  register_log_bridge(m);
}

}  // namespace weft::python
