#include "bench_op.h"

#include <stdexcept>

namespace weft_bench {
namespace {

// name, csv name, size meaning, reduces, rooted, out-of-place, in-place, CSV in place
constexpr OpTraits kTable[kNumBenchOps] = {
    {BenchOp::kAllReduce, "all_reduce", "allreduce", SizeMeaning::kPerRank, true, false, true, true,
     true},
    {BenchOp::kAllGather, "all_gather", "allgather", SizeMeaning::kGathered, false, false, true,
     true, false},
    {BenchOp::kBroadcast, "broadcast", "broadcast", SizeMeaning::kPerRank, false, true, true, true,
     true},
    {BenchOp::kReduce, "reduce", "reduce", SizeMeaning::kPerRank, true, true, true, true, true},
    {BenchOp::kReduceScatter, "reduce_scatter", "reduce_scatter", SizeMeaning::kScattered, true,
     false, true, true, false},
    {BenchOp::kAllToAll, "all_to_all", "alltoall", SizeMeaning::kScattered, false, false, true,
     false, false},
    {BenchOp::kGather, "gather", "gather", SizeMeaning::kGathered, false, true, true, true, false},
    {BenchOp::kScatter, "scatter", "scatter", SizeMeaning::kScattered, false, true, true, true,
     false},
    {BenchOp::kBarrier, "barrier", "barrier", SizeMeaning::kNone, false, false, true, false, false},
    {BenchOp::kSendRecv, "sendrecv", "sendrecv", SizeMeaning::kPerRank, false, false, true, false,
     false},
};

}  // namespace

const OpTraits& traits_of(BenchOp op) { return kTable[static_cast<int>(op)]; }

double busbw_factor(BenchOp op, int n) {
  const double ranks = n;
  switch (op) {
    case BenchOp::kAllReduce:
      return 2.0 * (ranks - 1) / ranks;
    case BenchOp::kAllGather:
    case BenchOp::kReduceScatter:
    case BenchOp::kAllToAll:
    case BenchOp::kGather:
    case BenchOp::kScatter:
      return (ranks - 1) / ranks;
    case BenchOp::kBroadcast:
    case BenchOp::kReduce:
    case BenchOp::kSendRecv:
      return 1.0;
    case BenchOp::kBarrier:
      return 0.0;
  }
  return 0.0;
}

std::vector<BenchOp> parse_ops(std::string_view text) {
  std::vector<BenchOp> ops;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view word = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (word == "all") {
      for (const OpTraits& t : kTable) ops.push_back(t.op);
      continue;
    }
    bool found = false;
    for (const OpTraits& t : kTable) {
      if (word == t.name || word == t.csv_name) {
        ops.push_back(t.op);
        found = true;
        break;
      }
    }
    if (!found) {
      throw std::invalid_argument("unknown op '" + std::string(word) +
                                  "' (all_reduce, all_gather, broadcast, reduce, reduce_scatter, "
                                  "all_to_all, gather, scatter, barrier, sendrecv or all)");
    }
  }
  if (ops.empty()) throw std::invalid_argument("no op given");
  return ops;
}

}  // namespace weft_bench
