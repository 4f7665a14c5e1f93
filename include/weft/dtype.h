// Element types weft moves and reduces, and their sizes and names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "weft/export.h"

namespace weft {

enum class DType : uint8_t {
  kFloat32,
  kFloat64,
  kFloat16,
  kBFloat16,
  kInt8,
  kUInt8,
  kInt16,
  kInt32,
  kInt64,
  kBool,
};

inline constexpr int kNumDTypes = 10;

// size_of's error path, out of line (and exported: size_of is inlined into applications).
[[noreturn]] WEFT_API void throw_unknown_dtype(DType dtype);

namespace detail {
// At namespace scope: a table local to size_of() was built on the stack at every call.
inline constexpr std::size_t kDTypeSizes[kNumDTypes] = {4, 8, 2, 2, 1, 1, 2, 4, 8, 1};
}  // namespace detail

// Bytes per element. Inline: every call asks it, several times for a small one.
inline std::size_t size_of(DType dtype) {
  const auto code = static_cast<std::size_t>(dtype);
  if (code >= static_cast<std::size_t>(kNumDTypes)) throw_unknown_dtype(dtype);
  return detail::kDTypeSizes[code];
}
// torch's spelling: "float32", "bfloat16", "bool", ...
WEFT_API std::string_view name_of(DType dtype);
// Parses torch's or numpy's spelling ("float32", "float", "f32", "half", "int64", ...);
// throws weft::Error(kInvalidArgument) naming the text when unknown.
WEFT_API DType parse_dtype(std::string_view text);

// 16-bit float storage types: weft never does arithmetic on them directly.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

template <typename T>
constexpr DType dtype_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>)
    return DType::kFloat32;
  else if constexpr (std::is_same_v<U, double>)
    return DType::kFloat64;
  else if constexpr (std::is_same_v<U, Half>)
    return DType::kFloat16;
  else if constexpr (std::is_same_v<U, BFloat16>)
    return DType::kBFloat16;
  else if constexpr (std::is_same_v<U, int8_t>)
    return DType::kInt8;
  else if constexpr (std::is_same_v<U, uint8_t>)
    return DType::kUInt8;
  else if constexpr (std::is_same_v<U, int16_t>)
    return DType::kInt16;
  else if constexpr (std::is_same_v<U, int32_t>)
    return DType::kInt32;
  else if constexpr (std::is_same_v<U, int64_t>)
    return DType::kInt64;
  else if constexpr (std::is_same_v<U, bool>)
    return DType::kBool;
  else
    static_assert(sizeof(U) == 0, "weft has no dtype for this element type");
}

}  // namespace weft
