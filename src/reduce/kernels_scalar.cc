// The portable kernels: plain element loops, the fallback on any CPU and the baseline the
// vector kernels are measured against. Compiled with the project's default flags only.
#include "reduce/simd_kernels.h"

namespace weft::reduce {

const KernelTable& scalar_kernel_table() {
  static constexpr KernelTable kTable =
      make_kernel_table<0, ScalarHalfCodec, ScalarBFloat16Codec>(Isa::kScalar);
  return kTable;
}

}  // namespace weft::reduce
