// The AVX2 kernels: 256-bit vectors, float16 through F16C. Compiled with -mavx2 -mfma -mf16c
// (src/reduce/CMakeLists.txt) and only called when the CPU has all three (cpu_supports).
#include <immintrin.h>

#include "reduce/simd_kernels.h"

namespace weft::reduce {
namespace {

// Eight float16 values <-> one __m256 with F16C (round to nearest even, NaN kept quiet).
struct Avx2HalfCodec : ScalarHalfCodec {
  static constexpr int kLanes = 8;
  using Floats = Vec<float, 32>;

  static Floats load(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static void store(uint16_t* p, Floats f) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT));
  }
};

// bfloat16 as in simd_kernels.h, but widened with one vpmovzxwd ymm: GCC 12 lowers the
// generic __builtin_convertvector to two 128-bit widenings and an insert.
struct Avx2BFloat16Codec : VectorBFloat16Codec<8> {
  static Floats load(const uint16_t* p) {
    const __m256i wide =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
};

}  // namespace

const KernelTable& avx2_kernel_table() {
  static constexpr KernelTable kTable =
      make_kernel_table<32, Avx2HalfCodec, Avx2BFloat16Codec>(Isa::kAvx2);
  return kTable;
}

}  // namespace weft::reduce
