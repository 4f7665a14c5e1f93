// The reduction kernels of every instruction set this machine has, against plain loops
// written here: every dtype x op x count (around each vector width) x alignment, NaN
// propagation, float16/bfloat16 rounding, reduce_many, scale/divide and the errors.
#include "reduce/reduce_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "reduce/half_convert.h"
#include "reduce/kernel_table.h"
#include "support/errors.h"
#include "support/typed_values.h"
#include "weft/error.h"

namespace weft::reduce {
namespace {

using testing::all_dtypes;
using testing::error_of;
using testing::is_float;

constexpr std::size_t kCounts[] = {0, 1, 7, 15, 16, 17, 63, 64, 65, 1000, 4099};

constexpr ReduceOp::Kind kAllKinds[] = {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin,
                                        ReduceOp::kMax, ReduceOp::kAvg,     ReduceOp::kBand,
                                        ReduceOp::kBor, ReduceOp::kBxor,    ReduceOp::kPremulSum};

std::vector<Isa> available_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (cpu_supports(isa)) isas.push_back(isa);
  }
  return isas;
}

bool is_bitwise(ReduceOp::Kind k) {
  return k == ReduceOp::kBand || k == ReduceOp::kBor || k == ReduceOp::kBxor;
}

// The rules of reduce_kernels.h, restated independently of check_supported.
bool supported(DType d, ReduceOp::Kind k) {
  if (is_float(d) && is_bitwise(k)) return false;
  if (d == DType::kBool && k == ReduceOp::kAvg) return false;
  if (!is_float(d) && k == ReduceOp::kPremulSum) return false;
  return true;
}

// --- the reference: one element at a time -------------------------------------------------

template <typename F>
F reference_float(ReduceOp::Kind kind, F a, F b) {
  switch (kind) {
    case ReduceOp::kProduct:
      return a * b;
    case ReduceOp::kMin:
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
      return b < a ? b : a;
    case ReduceOp::kMax:
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
      return b > a ? b : a;
    default:  // SUM, AVG, PREMUL_SUM
      return a + b;
  }
}

template <typename T>
T reference_integer(ReduceOp::Kind kind, T a, T b) {
  using U = std::make_unsigned_t<T>;
  const uint64_t ua = static_cast<U>(a), ub = static_cast<U>(b);
  switch (kind) {
    case ReduceOp::kProduct:
      return static_cast<T>(static_cast<U>(ua * ub));  // wraps: low bits of the product
    case ReduceOp::kMin:
      return b < a ? b : a;
    case ReduceOp::kMax:
      return b > a ? b : a;
    case ReduceOp::kBand:
      return static_cast<T>(a & b);
    case ReduceOp::kBor:
      return static_cast<T>(a | b);
    case ReduceOp::kBxor:
      return static_cast<T>(a ^ b);
    default:
      return static_cast<T>(static_cast<U>(ua + ub));
  }
}

uint8_t reference_bool(ReduceOp::Kind kind, uint8_t a, uint8_t b) {
  switch (kind) {
    case ReduceOp::kProduct:
    case ReduceOp::kMin:
    case ReduceOp::kBand:
      return a && b;
    case ReduceOp::kBxor:
      return a != b;
    default:  // SUM, MAX, BOR
      return a || b;
  }
}

// Element storage per dtype: bool is one byte, 0 or 1.
template <typename T>
using Storage = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

template <typename T>
Storage<T> reference(ReduceOp::Kind kind, Storage<T> a, Storage<T> b) {
  if constexpr (std::is_same_v<T, Half>) {
    return to_half(reference_float(kind, to_float(a), to_float(b)));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return to_bfloat16(reference_float(kind, to_float(a), to_float(b)));
  } else if constexpr (std::is_floating_point_v<T>) {
    return reference_float(kind, a, b);
  } else if constexpr (std::is_same_v<T, bool>) {
    return reference_bool(kind, a, b);
  } else {
    return reference_integer(kind, a, b);
  }
}

// Equal values (so +0 == -0), or both NaN; integers exactly.
template <typename T>
bool same_value(Storage<T> want, Storage<T> got) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return same_value<float>(to_float(want), to_float(got));
  } else if constexpr (std::is_floating_point_v<T>) {
    return (std::isnan(want) && std::isnan(got)) || want == got;
  } else {
    return want == got;
  }
}

template <typename T>
double as_double(Storage<T> v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return to_float(v);
  } else {
    return static_cast<double>(v);
  }
}

// Float inputs are small integers, so every sum and product of two is exact in every float
// type and the comparison can be exact; integers take all their bits, to exercise wrapping.
template <typename T>
std::vector<Storage<T>> make_input(std::size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Storage<T>> v(count);
  for (auto& x : v) {
    const int small = static_cast<int>(rng() % 9) - 4;
    if constexpr (std::is_same_v<T, Half>) {
      x = to_half(static_cast<float>(small));
    } else if constexpr (std::is_same_v<T, BFloat16>) {
      x = to_bfloat16(static_cast<float>(small));
    } else if constexpr (std::is_floating_point_v<T>) {
      x = static_cast<T>(small);
    } else if constexpr (std::is_same_v<T, bool>) {
      x = static_cast<uint8_t>(rng() & 1);
    } else {
      x = static_cast<T>(rng());
    }
  }
  return v;
}

template <typename F>
void visit_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32:
      return f(float{});
    case DType::kFloat64:
      return f(double{});
    case DType::kFloat16:
      return f(Half{});
    case DType::kBFloat16:
      return f(BFloat16{});
    case DType::kInt8:
      return f(int8_t{});
    case DType::kUInt8:
      return f(uint8_t{});
    case DType::kInt16:
      return f(int16_t{});
    case DType::kInt32:
      return f(int32_t{});
    case DType::kInt64:
      return f(int64_t{});
    case DType::kBool:
      return f(bool{});
  }
}

// Runs reduce_pair (out of place, or in place when in_place) at element offset `offset` and
// checks every element plus the untouched guard element after the end.
template <typename T>
void check_pair(const KernelTable& table, DType dtype, ReduceOp::Kind kind, std::size_t count,
                std::size_t offset, bool in_place) {
  using S = Storage<T>;
  const std::size_t n = count + offset + 1;
  std::vector<S> a = make_input<T>(n, count * 31 + 1);
  const std::vector<S> b = make_input<T>(n, count * 31 + 2);
  std::vector<S> out = make_input<T>(n, count * 31 + 3);
  const std::vector<S> a_before = a, out_before = out;
  S* dst = in_place ? a.data() + offset : out.data() + offset;
  const S* x = in_place ? dst : a.data() + offset;  // in place: dst is the first input
  reduce_pair_with(table, dtype, ReduceOp(kind), dst, x, b.data() + offset, count);
  const std::vector<S>& result = in_place ? a : out;
  const std::vector<S>& untouched = in_place ? a_before : out_before;
  for (std::size_t i = 0; i < n; ++i) {
    const bool inside = i >= offset && i < offset + count;
    const S want = inside ? reference<T>(kind, a_before[i], b[i]) : untouched[i];
    ASSERT_TRUE(same_value<T>(want, result[i]))
        << "element " << i << ": want " << as_double<T>(want) << " got " << as_double<T>(result[i])
        << " (a=" << as_double<T>(a_before[i]) << " b=" << as_double<T>(b[i]) << ")";
  }
}

class ReduceKernelsTest : public ::testing::TestWithParam<std::tuple<Isa, DType>> {};

TEST_P(ReduceKernelsTest, MatchesScalarLoopForEveryOpCountAndAlignment) {
  const auto [isa, dtype] = GetParam();
  const KernelTable& table = kernel_table_for(isa);
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (ReduceOp::Kind kind : kAllKinds) {
      if (!supported(dtype, kind)) continue;
      for (std::size_t count : kCounts) {
        for (std::size_t offset : {0, 1}) {
          for (bool in_place : {false, true}) {
            SCOPED_TRACE(std::string(name_of(kind)) + " count=" + std::to_string(count) +
                         " offset=" + std::to_string(offset) + (in_place ? " in place" : ""));
            check_pair<T>(table, dtype, kind, count, offset, in_place);
            if (::testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  });
}

TEST_P(ReduceKernelsTest, UnsupportedPairsThrowInvalidArgument) {
  const auto [isa, dtype] = GetParam();
  const KernelTable& table = kernel_table_for(isa);
  for (ReduceOp::Kind kind : kAllKinds) {
    if (supported(dtype, kind)) continue;
    char dst[16] = {};
    Error error =
        error_of([&] { reduce_pair_with(table, dtype, ReduceOp(kind), dst, dst, dst, 1); });
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(error.message().find(name_of(kind)), std::string::npos) << error.message();
    EXPECT_NE(error.message().find(name_of(dtype)), std::string::npos) << error.message();
  }
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<Isa, DType>>& info) {
  return std::string(isa_name(std::get<0>(info.param))) + "_" +
         std::string(name_of(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(AllIsasAndDTypes, ReduceKernelsTest,
                         ::testing::Combine(::testing::ValuesIn(available_isas()),
                                            ::testing::ValuesIn(all_dtypes())),
                         param_name);

// --- per instruction set: NaN, rounding, conversions, reduce_many ---------------------------

class IsaTest : public ::testing::TestWithParam<Isa> {
 protected:
  const KernelTable& table() const { return kernel_table_for(GetParam()); }
};

INSTANTIATE_TEST_SUITE_P(AllIsas, IsaTest, ::testing::ValuesIn(available_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                           return std::string(isa_name(info.param));
                         });

template <typename T>
Storage<T> from_double(double v) {
  if constexpr (std::is_same_v<T, Half>) {
    return to_half(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return to_bfloat16(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

TEST_P(IsaTest, MinMaxPropagateNaN) {
  constexpr std::size_t kCount = 1000;
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    visit_dtype(dtype, [&](auto tag) {
      using T = decltype(tag);
      using S = Storage<T>;
      const double nan = std::numeric_limits<double>::quiet_NaN();
      std::vector<S> a(kCount + 1), b(kCount + 1), out(kCount + 1);
      for (std::size_t i = 0; i < a.size(); ++i) {
        a[i] = from_double<T>(i % 7 == 3 ? nan : double(i % 5));
        b[i] = from_double<T>(i % 11 == 5 ? nan : double(i % 3));
      }
      for (ReduceOp::Kind kind : {ReduceOp::kMin, ReduceOp::kMax}) {
        reduce_pair_with(table(), dtype, ReduceOp(kind), out.data() + 1, a.data() + 1, b.data() + 1,
                         kCount);
        for (std::size_t i = 1; i <= kCount; ++i) {
          const bool any_nan = i % 7 == 3 || i % 11 == 5;
          const double got = as_double<T>(out[i]);
          ASSERT_EQ(std::isnan(got), any_nan) << name_of(dtype) << " " << name_of(kind) << " " << i;
          if (!any_nan) {
            const double x = double(i % 5), y = double(i % 3);
            ASSERT_EQ(got, kind == ReduceOp::kMin ? std::min(x, y) : std::max(x, y));
          }
        }
      }
    });
  }
}

// Random bit patterns (all exponents, subnormals, infinities, NaN): the vector conversions
// must round exactly as the scalar ones. Sums and products compared bit for bit.
TEST_P(IsaTest, HalfTypesRoundLikeScalarConversions) {
  constexpr std::size_t kCount = 4099;
  std::mt19937 rng(42);
  std::vector<uint16_t> a(kCount + 1), b(kCount + 1), out(kCount + 1);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<uint16_t>(rng());
    b[i] = static_cast<uint16_t>(rng());
  }
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const bool f16 = dtype == DType::kFloat16;
    auto widen = [f16](uint16_t h) {
      return f16 ? half_bits_to_float(h) : bfloat16_bits_to_float(h);
    };
    auto narrow = [f16](float f) {
      return f16 ? float_to_half_bits(f) : float_to_bfloat16_bits(f);
    };
    for (ReduceOp::Kind kind : {ReduceOp::kSum, ReduceOp::kProduct}) {
      reduce_pair_with(table(), dtype, ReduceOp(kind), out.data() + 1, a.data() + 1, b.data() + 1,
                       kCount);
      for (std::size_t i = 1; i <= kCount; ++i) {
        const float exact = reference_float(kind, widen(a[i]), widen(b[i]));
        if (std::isnan(exact)) {
          ASSERT_TRUE(std::isnan(widen(out[i]))) << i;
        } else {
          ASSERT_EQ(out[i], narrow(exact))
              << name_of(dtype) << " " << name_of(kind) << " " << std::hex << a[i] << " " << b[i];
        }
      }
    }
  }
}

TEST_P(IsaTest, WidenAndNarrowKernelsMatchScalarBitForBit) {
  std::vector<uint16_t> all(65536 + 1);
  for (uint32_t h = 0; h < 65536; ++h) all[h + 1] = static_cast<uint16_t>(h);
  std::vector<float> floats(65536 + 1);
  std::mt19937 rng(3);
  std::vector<float> samples(100003);
  for (float& f : samples) f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
  std::vector<uint16_t> narrowed(samples.size());
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const bool f16 = dtype == DType::kFloat16;
    table().widen[half_index(dtype)](floats.data() + 1, all.data() + 1, 65536);
    for (uint32_t h = 0; h < 65536; ++h) {
      const float want = f16 ? half_bits_to_float(static_cast<uint16_t>(h))
                             : bfloat16_bits_to_float(static_cast<uint16_t>(h));
      ASSERT_EQ(std::bit_cast<uint32_t>(floats[h + 1]), std::bit_cast<uint32_t>(want))
          << name_of(dtype) << std::hex << " " << h;
    }
    table().narrow[half_index(dtype)](narrowed.data(), samples.data(), samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const uint16_t want =
          f16 ? float_to_half_bits(samples[i]) : float_to_bfloat16_bits(samples[i]);
      ASSERT_EQ(narrowed[i], want)
          << name_of(dtype) << std::hex << " " << std::bit_cast<uint32_t>(samples[i]);
    }
  }
}

// float16/bfloat16 reduce_many: accumulate in float32 in input order, round once.
TEST_P(IsaTest, ReduceManyOnHalfTypesRoundsOnce) {
  constexpr std::size_t kCount = 4099;  // several accumulator blocks plus a tail
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> wide(-2.0f, 2.0f), near_one(0.5f, 1.5f);
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const bool f16 = dtype == DType::kFloat16;
    auto widen = [f16](uint16_t h) {
      return f16 ? half_bits_to_float(h) : bfloat16_bits_to_float(h);
    };
    auto narrow = [f16](float f) {
      return f16 ? float_to_half_bits(f) : float_to_bfloat16_bits(f);
    };
    for (ReduceOp op :
         {ReduceOp(ReduceOp::kSum), ReduceOp(ReduceOp::kAvg), ReduceOp::premul_sum(0.3),
          ReduceOp(ReduceOp::kProduct), ReduceOp(ReduceOp::kMin), ReduceOp(ReduceOp::kMax)}) {
      for (std::size_t nsrcs = 1; nsrcs <= 8; ++nsrcs) {
        std::vector<std::vector<uint16_t>> inputs(nsrcs, std::vector<uint16_t>(kCount));
        std::vector<const void*> srcs;
        for (auto& input : inputs) {
          for (auto& x : input)
            x = narrow(op.kind == ReduceOp::kProduct ? near_one(rng) : wide(rng));
          srcs.push_back(input.data());
        }
        const float factor = op.kind == ReduceOp::kPremulSum ? static_cast<float>(op.factor) : 1.0f;
        std::vector<uint16_t> out(kCount);
        reduce_many_with(table(), dtype, op, out.data(), srcs.data(), nsrcs, kCount);
        for (std::size_t i = 0; i < kCount; ++i) {
          float acc = widen(inputs[0][i]) * factor;
          for (std::size_t k = 1; k < nsrcs; ++k) {
            acc = reference_float(op.kind, acc, widen(inputs[k][i]) * factor);
          }
          ASSERT_EQ(out[i], narrow(acc))
              << name_of(dtype) << " " << name_of(op.kind) << " nsrcs=" << nsrcs << " i=" << i;
        }
      }
    }
  }
}

// Why reduce_many exists: a chain of float16 reduce_into rounds after every input.
TEST_P(IsaTest, ReduceManyDiffersFromAChainOfPairs) {
  constexpr std::size_t kCount = 1000;
  constexpr std::size_t kInputs = 8;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::vector<uint16_t>> inputs(kInputs, std::vector<uint16_t>(kCount));
  std::vector<const void*> srcs;
  for (auto& input : inputs) {
    for (auto& x : input) x = float_to_half_bits(dist(rng));
    srcs.push_back(input.data());
  }
  std::vector<uint16_t> once(kCount), chained = inputs[0];
  reduce_many_with(table(), DType::kFloat16, ReduceOp::kSum, once.data(), srcs.data(), kInputs,
                   kCount);
  for (std::size_t k = 1; k < kInputs; ++k) {
    reduce_pair_with(table(), DType::kFloat16, ReduceOp::kSum, chained.data(), chained.data(),
                     inputs[k].data(), kCount);
  }
  EXPECT_NE(once, chained);
}

// Other dtypes: the same as a chain of pairs; dst may be srcs[0].
TEST_P(IsaTest, ReduceManyMatchesChainedReference) {
  constexpr std::size_t kCount = 8195;  // past one 8 KiB block for every element size
  for (DType dtype : all_dtypes()) {
    if (dtype == DType::kFloat16 || dtype == DType::kBFloat16) continue;
    visit_dtype(dtype, [&](auto tag) {
      using T = decltype(tag);
      using S = Storage<T>;
      for (ReduceOp::Kind kind : kAllKinds) {
        if (!supported(dtype, kind)) continue;
        const ReduceOp op =
            kind == ReduceOp::kPremulSum ? ReduceOp::premul_sum(0.5) : ReduceOp(kind);
        for (std::size_t nsrcs : {1, 2, 3, 5}) {
          std::vector<std::vector<S>> inputs;
          std::vector<const void*> srcs;
          for (std::size_t k = 0; k < nsrcs; ++k) inputs.push_back(make_input<T>(kCount, k + 100));
          for (auto& input : inputs) srcs.push_back(input.data());
          std::vector<S> want(kCount);
          for (std::size_t i = 0; i < kCount; ++i) {
            S acc = inputs[0][i];
            if constexpr (std::is_floating_point_v<T>) {
              if (kind == ReduceOp::kPremulSum) acc = static_cast<T>(acc * T(0.5));
            }
            for (std::size_t k = 1; k < nsrcs; ++k) {
              S x = inputs[k][i];
              if constexpr (std::is_floating_point_v<T>) {
                if (kind == ReduceOp::kPremulSum) x = static_cast<T>(x * T(0.5));
              }
              acc = reference<T>(kind, acc, x);
            }
            want[i] = acc;
          }
          // In place: the result goes over the first input.
          reduce_many_with(table(), dtype, op, inputs[0].data(), srcs.data(), nsrcs, kCount);
          for (std::size_t i = 0; i < kCount; ++i) {
            ASSERT_TRUE(same_value<T>(want[i], inputs[0][i]))
                << name_of(dtype) << " " << name_of(kind) << " nsrcs=" << nsrcs << " i=" << i;
          }
        }
      }
    });
  }
}

// --- the public entry points --------------------------------------------------------------

TEST(ReduceKernels, PublicEntryPointsUseTheActiveTable) {
  const std::string isa = active_isa();
  EXPECT_TRUE(isa == "scalar" || isa == "avx2" || isa == "avx512") << isa;
  if (std::getenv("WEFT_REDUCE_ISA") == nullptr) {
    EXPECT_EQ(isa, isa_name(best_supported_isa()));
  }

  std::vector<int32_t> dst = {1, -2, 3, std::numeric_limits<int32_t>::max()};
  const std::vector<int32_t> src = {10, 20, -30, 1};
  reduce_into(DType::kInt32, ReduceOp::kSum, dst.data(), src.data(), dst.size());
  EXPECT_EQ(dst, (std::vector<int32_t>{11, 18, -27, std::numeric_limits<int32_t>::min()}));

  std::vector<uint8_t> flags = {0, 1, 0, 1}, other = {0, 0, 1, 1}, out(4);
  reduce_pair(DType::kBool, ReduceOp::kSum, out.data(), flags.data(), other.data(), 4);
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 1, 1, 1}));
  reduce_pair(DType::kBool, ReduceOp::kProduct, out.data(), flags.data(), other.data(), 4);
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 0, 0, 1}));

  const std::vector<float> x = {1, 2}, y = {3, 4}, z = {5, 6};
  const void* srcs[] = {x.data(), y.data(), z.data()};
  std::vector<float> sum(2);
  reduce_many(DType::kFloat32, ReduceOp::kAvg, sum.data(), srcs, 3, 2);
  divide(DType::kFloat32, sum.data(), 2, 3);
  EXPECT_EQ(sum, (std::vector<float>{3, 4}));
}

TEST(ReduceKernels, ErrorsNameOpAndDType) {
  float f[2] = {1, 2};
  Error error = error_of([&] { reduce_into(DType::kFloat32, ReduceOp::kBand, f, f, 2); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(error.message().find("band"), std::string::npos) << error.message();
  EXPECT_NE(error.message().find("float32"), std::string::npos) << error.message();
  EXPECT_THROW(check_supported(DType::kBFloat16, ReduceOp::kBxor), Error);
  EXPECT_THROW(check_supported(DType::kBool, ReduceOp::kAvg), Error);
  EXPECT_THROW(check_supported(DType::kInt32, ReduceOp::premul_sum(2.0)), Error);
  EXPECT_NO_THROW(check_supported(DType::kInt32, ReduceOp::kAvg));
  EXPECT_NO_THROW(check_supported(DType::kBool, ReduceOp::kBxor));
  const void* none[] = {nullptr};
  EXPECT_THROW(reduce_many(DType::kFloat32, ReduceOp::kSum, f, none, 0, 2), Error);
}

TEST(ReduceKernels, CheckSupportedFollowsTheRulesForEveryPairAndRefusesUnknownCodes) {
  for (DType dtype : all_dtypes()) {
    for (ReduceOp::Kind kind : kAllKinds) {
      SCOPED_TRACE(std::string(name_of(dtype)) + " " + std::string(name_of(kind)));
      if (supported(dtype, kind)) {
        EXPECT_NO_THROW(check_supported(dtype, ReduceOp(kind)));
        continue;
      }
      Error error = error_of([&] { check_supported(dtype, ReduceOp(kind)); });
      EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(error.message().find(name_of(kind)), std::string::npos) << error.message();
    }
  }
  Error dtype_error = error_of([] { check_supported(static_cast<DType>(kNumDTypes), ReduceOp()); });
  EXPECT_EQ(dtype_error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(dtype_error.message().find("unknown dtype"), std::string::npos);
  Error op_error = error_of(
      [] { check_supported(DType::kInt32, ReduceOp(static_cast<ReduceOp::Kind>(kNumReduceOps))); });
  EXPECT_EQ(op_error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(op_error.message().find("unknown reduce op"), std::string::npos);
}

TEST(ReduceKernels, DivideTruncatesIntegersAndDividesFloatsExactly) {
  int8_t i8[] = {-7, 7, -128, 127, -1};
  divide(DType::kInt8, i8, 5, 2);
  EXPECT_EQ(std::vector<int8_t>(i8, i8 + 5), (std::vector<int8_t>{-3, 3, -64, 63, 0}));
  int64_t i64[] = {std::numeric_limits<int64_t>::min(), -9};
  divide(DType::kInt64, i64, 2, 4);
  EXPECT_EQ(i64[0], std::numeric_limits<int64_t>::min() / 4);
  EXPECT_EQ(i64[1], -2);
  uint8_t u8[] = {255};
  divide(DType::kUInt8, u8, 1, 7);
  EXPECT_EQ(u8[0], 36);
  float f32[] = {0.3f * 3};  // AVG of three equal inputs gives back the input's sum / 3
  divide(DType::kFloat32, f32, 1, 3);
  EXPECT_EQ(f32[0], (0.3f * 3) / 3.0f);
  Half h[] = {to_half(6.0f)};
  divide(DType::kFloat16, h, 1, 4);
  EXPECT_EQ(to_float(h[0]), 1.5f);
  uint8_t b[] = {1};
  EXPECT_THROW(divide(DType::kBool, b, 1, 2), Error);
  EXPECT_THROW(divide(DType::kInt32, i8, 1, 0), Error);
}

TEST(ReduceKernels, ScaleIsForFloatsOnly) {
  double d[] = {3.0, -1.0};
  scale(DType::kFloat64, d, 2, 0.5);
  EXPECT_EQ(d[0], 1.5);
  EXPECT_EQ(d[1], -0.5);
  BFloat16 bf[] = {to_bfloat16(3.0f)};
  scale(DType::kBFloat16, bf, 1, 0.25);
  EXPECT_EQ(to_float(bf[0]), 0.75f);
  int32_t i[] = {4};
  EXPECT_THROW(scale(DType::kInt32, i, 1, 0.5), Error);
}

TEST(ReduceKernels, SelectIsaReadsTheVariable) {
  EXPECT_EQ(select_isa(nullptr), best_supported_isa());
  EXPECT_EQ(select_isa(""), best_supported_isa());
  EXPECT_EQ(select_isa("scalar"), Isa::kScalar);
  Error error = error_of([&] { select_isa("sse9"); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(error.message().find("WEFT_REDUCE_ISA"), std::string::npos) << error.message();
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (cpu_supports(isa)) {
      EXPECT_EQ(select_isa(isa_name(isa)), isa);
    } else {
      EXPECT_THROW(select_isa(isa_name(isa)), Error);
    }
  }
}

}  // namespace
}  // namespace weft::reduce
