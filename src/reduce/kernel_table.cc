// Choosing the kernel table: CPU feature detection and WEFT_REDUCE_ISA.
#include "reduce/kernel_table.h"

#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "reduce/reduce_kernels.h"
#include "util/settings.h"
#include "weft/error.h"

#if defined(WEFT_REDUCE_X86)
#include <cpuid.h>
#endif

namespace weft::reduce {
namespace {

constexpr const char* kIsaVariable = "WEFT_REDUCE_ISA";

Error invalid(std::string message) {
  return Error(ErrorCode::kInvalidArgument, std::move(message));
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "unknown";
}

#if defined(WEFT_REDUCE_X86)
bool cpu_has_f16c() {
#if defined(__clang__) && __clang_major__ < 15
  // Clang before 15 does not know "f16c" in __builtin_cpu_supports: CPUID leaf 1, ECX bit 29.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
#else
  return __builtin_cpu_supports("f16c");
#endif
}
#endif

bool cpu_supports(Isa isa) {
  if (isa == Isa::kScalar) return true;
#if defined(WEFT_REDUCE_X86)
  // Also checks that the OS saves the YMM/ZMM registers (libgcc reads XGETBV).
  __builtin_cpu_init();
  if (isa == Isa::kAvx2) {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
  }
  if (isa == Isa::kAvx512) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  }
#endif
  return false;
}

Isa best_supported_isa() {
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2}) {
    if (cpu_supports(isa)) return isa;
  }
  return Isa::kScalar;
}

Isa select_isa(const char* requested) {
  if (requested == nullptr || *requested == '\0') return best_supported_isa();
  const std::string_view text(requested);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (text != isa_name(isa)) continue;
    if (!cpu_supports(isa)) {
      throw invalid(std::string(kIsaVariable) + "=" + std::string(text) +
                    ": this CPU cannot run it (best available: " + isa_name(best_supported_isa()) +
                    ")");
    }
    return isa;
  }
  throw invalid(std::string(kIsaVariable) + ": malformed value '" + std::string(text) +
                "' (expected scalar, avx2 or avx512)");
}

const KernelTable& kernel_table_for(Isa isa) {
  if (!cpu_supports(isa)) {
    throw invalid(std::string("reduce kernels for ") + isa_name(isa) +
                  " requested but this CPU cannot run them");
  }
  switch (isa) {
#if defined(WEFT_REDUCE_X86)
    case Isa::kAvx512:
      return avx512_kernel_table();
    case Isa::kAvx2:
      return avx2_kernel_table();
#endif
    default:
      return scalar_kernel_table();
  }
}

const KernelTable& active_kernel_table() {
  // A throw leaves the static uninitialized, so every later call reports the same error.
  static const KernelTable& table =
      kernel_table_for(select_isa(util::setting_string(kIsaVariable).c_str()));
  return table;
}

const char* active_isa() { return isa_name(active_kernel_table().isa); }

}  // namespace weft::reduce
