#include "weft/dtype.h"

#include <string>

#include "weft/error.h"

namespace weft {

void throw_unknown_dtype(DType dtype) {
  throw Error(ErrorCode::kInvalidArgument,
              "unknown dtype code " + std::to_string(static_cast<int>(dtype)));
}

std::string_view name_of(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kInt8:
      return "int8";
    case DType::kUInt8:
      return "uint8";
    case DType::kInt16:
      return "int16";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kBool:
      return "bool";
  }
  return "unknown";
}

DType parse_dtype(std::string_view text) {
  struct Alias {
    std::string_view name;
    DType dtype;
  };
  static constexpr Alias kAliases[] = {
      {"float32", DType::kFloat32},   {"float", DType::kFloat32},  {"f32", DType::kFloat32},
      {"float64", DType::kFloat64},   {"double", DType::kFloat64}, {"f64", DType::kFloat64},
      {"float16", DType::kFloat16},   {"half", DType::kFloat16},   {"f16", DType::kFloat16},
      {"bfloat16", DType::kBFloat16}, {"bf16", DType::kBFloat16},  {"int8", DType::kInt8},
      {"uint8", DType::kUInt8},       {"int16", DType::kInt16},    {"short", DType::kInt16},
      {"int32", DType::kInt32},       {"int", DType::kInt32},      {"int64", DType::kInt64},
      {"long", DType::kInt64},        {"bool", DType::kBool},
  };
  for (const Alias& alias : kAliases) {
    if (alias.name == text) return alias.dtype;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "unknown dtype '" + std::string(text) +
                  "' (expected float32, float64, float16, bfloat16, int8, uint8, int16, int32, "
                  "int64 or bool)");
}

}  // namespace weft
