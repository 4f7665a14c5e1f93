// Throughput of the reduction kernels per instruction set, dtype, op and size, next to a plain
// memcpy of the same bytes in the same run (these machines are noisy: only ratios measured
// side by side count).
//
// Each reduce benchmark runs reduce_into (dst = dst OP src) on `bytes` bytes per buffer.
// bytes_per_second counts the buffer once, like algbw; mem_bw counts what crosses the memory
// bus: 3x the buffer for a reduction (read dst, read src, write dst), 2x for memcpy. So at
// memory-bound sizes a reduction running at memory speed shows ~2/3 of memcpy's
// bytes_per_second and about the same mem_bw. Rates use wall-clock time: on a shared machine
// that is what a collective waiting on the kernel sees.
//
//   weft-reduce-bench --benchmark_filter='memcpy|float32/sum'   # the figures in the docs
//   weft-reduce-bench                                           # everything (several minutes)
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "reduce/half_convert.h"
#include "reduce/kernel_table.h"
#include "reduce/reduce_kernels.h"

namespace weft::reduce {
namespace {

constexpr std::size_t kSizes[] = {64 << 10, 1 << 20, 16 << 20, 64 << 20};

constexpr DType kDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                             DType::kInt8,    DType::kUInt8,   DType::kInt16,   DType::kInt32,
                             DType::kInt64,   DType::kBool};

constexpr ReduceOp::Kind kKinds[] = {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin,
                                     ReduceOp::kMax, ReduceOp::kBand,    ReduceOp::kBor,
                                     ReduceOp::kBxor};

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<unsigned char[], FreeDeleter>;

// Cache-line aligned, every page touched before timing starts.
Buffer make_buffer(std::size_t bytes) {
  Buffer b(static_cast<unsigned char*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
  std::memset(b.get(), 0, bytes);
  return b;
}

// Ones in the dtype: sums grow slowly, products stay put, nothing goes subnormal (which would
// measure microcode assists instead of the kernels).
void fill_ones(DType dtype, void* p, std::size_t count) {
  auto fill = [count](auto* typed, auto one) {
    for (std::size_t i = 0; i < count; ++i) typed[i] = one;
  };
  switch (dtype) {
    case DType::kFloat32:
      return fill(static_cast<float*>(p), 1.0f);
    case DType::kFloat64:
      return fill(static_cast<double*>(p), 1.0);
    case DType::kFloat16:
      return fill(static_cast<uint16_t*>(p), float_to_half_bits(1.0f));
    case DType::kBFloat16:
      return fill(static_cast<uint16_t*>(p), float_to_bfloat16_bits(1.0f));
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool:
      return fill(static_cast<uint8_t*>(p), uint8_t{1});
    case DType::kInt16:
      return fill(static_cast<int16_t*>(p), int16_t{1});
    case DType::kInt32:
      return fill(static_cast<int32_t*>(p), int32_t{1});
    case DType::kInt64:
      return fill(static_cast<int64_t*>(p), int64_t{1});
  }
}

void set_rates(benchmark::State& state, std::size_t bytes, int streams) {
  const auto iterations = static_cast<int64_t>(state.iterations());
  state.SetBytesProcessed(iterations * static_cast<int64_t>(bytes));
  state.counters["mem_bw"] =
      benchmark::Counter(static_cast<double>(iterations) * static_cast<double>(bytes * streams),
                         benchmark::Counter::kIsRate, benchmark::Counter::kIs1024);
}

void bm_memcpy(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  Buffer src = make_buffer(bytes), dst = make_buffer(bytes);
  for (auto _ : state) {
    std::memcpy(dst.get(), src.get(), bytes);
    benchmark::ClobberMemory();
  }
  set_rates(state, bytes, 2);
}

void bm_reduce_into(benchmark::State& state, Isa isa, DType dtype, ReduceOp::Kind kind) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const std::size_t count = bytes / size_of(dtype);
  const KernelTable& table = kernel_table_for(isa);
  Buffer src = make_buffer(bytes), dst = make_buffer(bytes);
  fill_ones(dtype, src.get(), count);
  fill_ones(dtype, dst.get(), count);
  for (auto _ : state) {
    reduce_pair_with(table, dtype, ReduceOp(kind), dst.get(), dst.get(), src.get(), count);
    benchmark::ClobberMemory();
  }
  set_rates(state, bytes, 3);
}

bool supported(DType dtype, ReduceOp::Kind kind) {
  try {
    check_supported(dtype, kind);
    return true;
  } catch (...) {
    return false;
  }
}

void register_all() {
  auto* copy = benchmark::RegisterBenchmark("memcpy", bm_memcpy);
  for (std::size_t bytes : kSizes) copy->Arg(static_cast<int64_t>(bytes))->UseRealTime();
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (!cpu_supports(isa)) continue;
    for (DType dtype : kDTypes) {
      for (ReduceOp::Kind kind : kKinds) {
        if (!supported(dtype, kind)) continue;
        const std::string name = std::string("reduce_into/") + isa_name(isa) + "/" +
                                 std::string(name_of(dtype)) + "/" + std::string(name_of(kind));
        auto* b = benchmark::RegisterBenchmark(name.c_str(), bm_reduce_into, isa, dtype, kind);
        for (std::size_t bytes : kSizes) b->Arg(static_cast<int64_t>(bytes))->UseRealTime();
      }
    }
  }
}

}  // namespace
}  // namespace weft::reduce

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  weft::reduce::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
