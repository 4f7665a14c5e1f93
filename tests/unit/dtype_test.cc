// Element sizes against the C++ types they stand for, torch's and numpy's spellings, and a
// clear error for a code no dtype has.
#include "weft/dtype.h"

#include <gtest/gtest.h>

#include "support/errors.h"
#include "weft/error.h"

namespace weft {
namespace {

using testing::error_of;

template <typename T>
void expect_size_of_type() {
  EXPECT_EQ(size_of(dtype_of<T>()), sizeof(T)) << name_of(dtype_of<T>());
}

TEST(DType, SizesMatchTheElementTypes) {
  expect_size_of_type<float>();
  expect_size_of_type<double>();
  expect_size_of_type<Half>();
  expect_size_of_type<BFloat16>();
  expect_size_of_type<int8_t>();
  expect_size_of_type<uint8_t>();
  expect_size_of_type<int16_t>();
  expect_size_of_type<int32_t>();
  expect_size_of_type<int64_t>();
  expect_size_of_type<bool>();
}

TEST(DType, EveryNameParsesBack) {
  for (int code = 0; code < kNumDTypes; ++code) {
    DType dtype = static_cast<DType>(code);
    EXPECT_EQ(parse_dtype(name_of(dtype)), dtype) << name_of(dtype);
  }
  EXPECT_EQ(parse_dtype("half"), DType::kFloat16);
  EXPECT_EQ(parse_dtype("long"), DType::kInt64);
}

TEST(DType, UnknownCodesAndNamesAreClearErrors) {
  Error error = error_of([&] { size_of(static_cast<DType>(kNumDTypes)); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(error.message().find("unknown dtype code 10"), std::string::npos) << error.message();
  EXPECT_THROW(parse_dtype("float8"), Error);
}

}  // namespace
}  // namespace weft
