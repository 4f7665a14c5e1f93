#include "weft/reduce_op.h"

namespace weft {

std::string_view name_of(ReduceOp::Kind kind) {
  switch (kind) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kProduct:
      return "product";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kAvg:
      return "avg";
    case ReduceOp::kBand:
      return "band";
    case ReduceOp::kBor:
      return "bor";
    case ReduceOp::kBxor:
      return "bxor";
    case ReduceOp::kPremulSum:
      return "premul_sum";
  }
  return "unknown";
}

}  // namespace weft
