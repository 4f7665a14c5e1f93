// weft._weft.ReduceOp — torch.distributed.ReduceOp's names (SUM, PRODUCT, MIN, MAX, AVG, BAND,
// BOR, BXOR) plus PREMUL_SUM with its factor: ReduceOp.premul_sum(0.5).
#include "weft/reduce_op.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <string>

#include "bindings.h"
#include "errors.h"

namespace weft::python {

namespace {

std::string upper(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  return out;
}

ReduceOp parse_reduce_op(const std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (lower.rfind("reduceop.", 0) == 0) lower = lower.substr(9);
  if (lower.rfind("redoptype.", 0) == 0) lower = lower.substr(10);
  for (int k = 0; k < kNumReduceOps; ++k) {
    auto kind = static_cast<ReduceOp::Kind>(k);
    if (name_of(kind) == lower) return ReduceOp(kind);
  }
  throw_invalid_argument("unknown reduce op '" + text +
                         "': expected sum, product, min, max, avg, band, bor, bxor or premul_sum");
}

}  // namespace

void register_reduce_op(py::module_& m) {
  auto cls = py::class_<ReduceOp>(m, "ReduceOp", R"doc(
A reduction, as torch.distributed.ReduceOp: ReduceOp.SUM, PRODUCT, MIN, MAX, AVG, BAND, BOR,
BXOR, and ReduceOp.premul_sum(factor) (each input multiplied by factor, then summed).
Bitwise ops apply to integer and bool dtypes only.)doc");
  cls.def(py::init([](const std::string& name) { return parse_reduce_op(name); }), py::arg("name"))
      .def_static("premul_sum", &ReduceOp::premul_sum, py::arg("factor"))
      .def_property_readonly("name", [](const ReduceOp& op) { return upper(name_of(op.kind)); })
      .def_property_readonly("factor", [](const ReduceOp& op) { return op.factor; })
      .def("__eq__",
           [](const ReduceOp& a, py::object other) {
             if (!py::isinstance<ReduceOp>(other)) return false;
             auto b = other.cast<ReduceOp>();
             return a.kind == b.kind && (a.kind != ReduceOp::kPremulSum || a.factor == b.factor);
           })
      .def("__hash__",
           [](const ReduceOp& op) {
             return std::hash<int>()(op.kind) ^
                    (op.kind == ReduceOp::kPremulSum ? std::hash<double>()(op.factor) : 0);
           })
      .def("__repr__", [](const ReduceOp& op) {
        std::string text = "ReduceOp." + upper(name_of(op.kind));
        if (op.kind == ReduceOp::kPremulSum) text += "(" + std::to_string(op.factor) + ")";
        return text;
      });
  for (int k = 0; k < kNumReduceOps; ++k) {
    auto kind = static_cast<ReduceOp::Kind>(k);
    cls.attr(upper(name_of(kind)).c_str()) = ReduceOp(kind);
  }
}

}  // namespace weft::python
