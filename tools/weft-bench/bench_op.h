// The operations weft-bench measures, and what nccl-tests means by each one's "size".
//
// Contract: a fixed table, no state. Names are nccl-tests' (all_reduce, all_gather, ...);
// csv_name is the anchors' spelling (allreduce, allgather, ...). busbw_factor follows
// DESIGN.md and nccl-tests' PERFORMANCE.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace weft_bench {

enum class BenchOp {
  kAllReduce,
  kAllGather,
  kBroadcast,
  kReduce,
  kReduceScatter,
  kAllToAll,
  kGather,
  kScatter,
  kBarrier,
  kSendRecv,
};

inline constexpr int kNumBenchOps = 10;

// What the nccl-tests "size" of an op is.
enum class SizeMeaning {
  kPerRank,    // the one buffer of every rank (all_reduce, broadcast, reduce, sendrecv)
  kGathered,   // the whole receive buffer: world size x per-rank block (all_gather, gather)
  kScattered,  // the whole send buffer: world size x per-rank block (reduce_scatter,
               // all_to_all, scatter)
  kNone,       // no data (barrier)
};

struct OpTraits {
  BenchOp op;
  std::string_view name;      // all_reduce
  std::string_view csv_name;  // allreduce
  SizeMeaning size_meaning;
  bool reduces;       // takes a reduce op (-o)
  bool rooted;        // takes a root (-r)
  bool out_of_place;  // weft's API has an out-of-place form
  bool in_place;      // weft's API has an in-place form
  bool csv_in_place;  // which of the two the CSV row reports (the anchors' choice)
};

const OpTraits& traits_of(BenchOp op);

// nccl-tests' bus-bandwidth factor at world size n.
double busbw_factor(BenchOp op, int n);

// One name, a comma-separated list, or "all" (every op in table order). Throws
// std::invalid_argument naming the unknown op.
std::vector<BenchOp> parse_ops(std::string_view text);

}  // namespace weft_bench
