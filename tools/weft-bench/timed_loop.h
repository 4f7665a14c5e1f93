// The timing of one cell, by nccl-tests' method (-n given) or the anchors' (--target-seconds).
//
// Fixed (-n N, the default): -w warm-up ops, a barrier, then N ops back to back in one batch;
// each rank times its own batch and the batch time is MAX-reduced over ranks.
// Adaptive (--target-seconds T without -n), as shared/anchors/mpi_coll_bench.c: one timed
// probe op, 1-5 warm-up ops (~50 ms), iters = T / (mean warm-up op) clamped to
// [--min-iters, --max-iters], run in up to 5 batches, each after a barrier; each batch's time
// is MAX-reduced over ranks; the run stops once 2 T has been spent. Every decision uses
// values MAX-reduced over ranks, so all ranks run the same number of ops.
// Both: time_us = sum of batch maxima / iters; med/min/max_us = median / fastest / slowest
// batch mean. With -a 1 the ops are issued with the i* forms: -z 1 waits for each before the
// next, -z 0 keeps up to 64 in flight and waits for all at the end of the batch.
#pragma once

#include <functional>
#include <memory>

#include "options.h"
#include "rank_control.h"
#include "weft/process_group.h"
#include "weft/work.h"

namespace weft_bench {

struct Timing {
  long iters = 0;
  int batches = 0;
  double time_us = 0;
  double med_us = 0;
  double min_us = 0;
  double max_us = 0;
};

// Issues one op: returns its Work in async mode, null when it already completed.
using Launcher = std::function<std::shared_ptr<weft::Work>()>;

class TimedLoop {
 public:
  TimedLoop(weft::ProcessGroup& group, RankControl& control, const BenchOptions& options,
            Launcher launcher)
      : group_(group), control_(control), options_(options), launcher_(std::move(launcher)) {}

  Timing run();

 private:
  double run_ops(long k);      // this rank's seconds for k ops, issued and completed
  double max_seconds(long k);  // run_ops, MAX over ranks
  Timing run_fixed();
  Timing run_adaptive();

  weft::ProcessGroup& group_;
  RankControl& control_;
  const BenchOptions& options_;
  Launcher launcher_;
};

}  // namespace weft_bench
