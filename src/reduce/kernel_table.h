// The kernel tables behind reduce_kernels.h, one per instruction set, and the choice between
// them. Internal to the reduce layer and its tests and benchmarks.
//
// Contract: a KernelTable is an immutable set of plain function pointers, built at compile
// time and valid for the life of the program; every kernel is safe to call from any number
// of threads at once (it touches only the buffers it is given). kernel_table_for(isa) must
// only be asked for an Isa that cpu_supports(); the active table is chosen once, on first use,
// from the CPU and WEFT_REDUCE_ISA (see reduce_kernels.h).
//
// Each per-ISA table is defined in its own translation unit (kernels_scalar.cc,
// kernels_avx2.cc, kernels_avx512.cc), compiled with that ISA's -m flags. Those units include
// this header but call nothing declared here at run time, so no shared inline code can be
// compiled with their flags and then picked by the linker for a caller on an older CPU.
#pragma once

#include <cstddef>
#include <cstdint>

#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft::reduce {

enum class Isa : uint8_t { kScalar, kAvx2, kAvx512 };
inline constexpr int kNumIsas = 3;

// The element-wise operations a kernel implements. AVG and PREMUL_SUM reduce as SUM (their
// scaling is a separate pass); bool maps SUM/MAX to OR and PRODUCT/MIN to AND.
enum class KernelOp : uint8_t { kSum, kProduct, kMin, kMax, kBand, kBor, kBxor };
inline constexpr int kNumKernelOps = 7;

// dst[i] = a[i] OP b[i]; dst may be a or b, but must not partially overlap them.
using BinaryKernel = void (*)(void* dst, const void* a, const void* b, std::size_t count);
// float16/bfloat16 <-> float32 for whole arrays (the scalar rules of half_convert.h).
using WidenKernel = void (*)(float* dst, const void* src, std::size_t count);
using NarrowKernel = void (*)(void* dst, const float* src, std::size_t count);

struct KernelTable {
  Isa isa;
  // [dtype][kernel op]; nullptr where the pair is unsupported (bitwise ops on floats).
  BinaryKernel binary[kNumDTypes][kNumKernelOps];
  // [0] float16, [1] bfloat16.
  WidenKernel widen[2];
  NarrowKernel narrow[2];
};

// "scalar", "avx2", "avx512".
const char* isa_name(Isa isa);
// Whether this CPU (and OS) can run the kernels of `isa`.
bool cpu_supports(Isa isa);
// The most capable Isa this CPU supports.
Isa best_supported_isa();
// The Isa to use given the value of WEFT_REDUCE_ISA (nullptr or "" when unset: the best one).
// Throws weft::Error(kInvalidArgument) naming the variable for an unknown value or an Isa this
// CPU cannot run.
Isa select_isa(const char* requested);

// The table for one Isa. Throws weft::Error(kInvalidArgument) if !cpu_supports(isa).
const KernelTable& kernel_table_for(Isa isa);
// The table chosen once per process (select_isa of WEFT_REDUCE_ISA).
const KernelTable& active_kernel_table();

// Index into KernelTable::widen / narrow; dtype must be float16 or bfloat16.
inline constexpr int half_index(DType dtype) { return dtype == DType::kFloat16 ? 0 : 1; }

// Defined one per translation unit, each compiled with its own instruction-set flags.
const KernelTable& scalar_kernel_table();
const KernelTable& avx2_kernel_table();
const KernelTable& avx512_kernel_table();

// reduce_kernels.h's functions on an explicit table, so tests and benchmarks can run every
// Isa the machine has. Same contracts as the public functions.
void reduce_pair_with(const KernelTable& table, DType dtype, ReduceOp op, void* dst, const void* a,
                      const void* b, std::size_t count);
void reduce_many_with(const KernelTable& table, DType dtype, ReduceOp op, void* dst,
                      const void* const* srcs, std::size_t nsrcs, std::size_t count);

}  // namespace weft::reduce
