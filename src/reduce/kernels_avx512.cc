// The AVX-512 kernels: 512-bit vectors (F, BW for bytes and words, VL and DQ for the 64-bit
// min/max and multiplies), float16 through vcvtph2ps/vcvtps2ph. Compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512dq (src/reduce/CMakeLists.txt) and only called when
// the CPU has all four (cpu_supports).
#include <immintrin.h>

#include "reduce/simd_kernels.h"

namespace weft::reduce {
namespace {

// Sixteen float16 values <-> one __m512 (round to nearest even, NaN kept quiet). The all-ones
// maskz forms compile to the same unmasked instructions; the plain forms start from
// _mm512_undefined_*, which trips GCC 12's -Wmaybe-uninitialized (GCC bug 105593).
constexpr __mmask16 kAllLanes = 0xFFFF;

struct Avx512HalfCodec : ScalarHalfCodec {
  static constexpr int kLanes = 16;
  using Floats = Vec<float, 64>;

  static Floats load(const uint16_t* p) {
    return _mm512_maskz_cvtph_ps(kAllLanes,
                                 _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static void store(uint16_t* p, Floats f) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_maskz_cvtps_ph(kAllLanes, f, _MM_FROUND_TO_NEAREST_INT));
  }
};

}  // namespace

const KernelTable& avx512_kernel_table() {
  static constexpr KernelTable kTable =
      make_kernel_table<64, Avx512HalfCodec, VectorBFloat16Codec<16>>(Isa::kAvx512);
  return kTable;
}

}  // namespace weft::reduce
