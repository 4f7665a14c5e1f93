// weft-bench's command line: nccl-tests' flags plus weft's own (docs/weft-bench.md).
//
// Contract: parse_options never touches the network and throws UsageError with a one-line
// message for anything malformed. Every rank parses the same command line, so every rank
// gets the same BenchOptions and takes the same decisions.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_op.h"
#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft_bench {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct BenchOptions {
  std::vector<BenchOp> ops{BenchOp::kAllReduce};
  std::size_t min_bytes = 32u << 20;  // -b (nccl-tests' default 32M)
  std::size_t max_bytes = 32u << 20;  // -e
  std::size_t step_factor = 1;        // -f; > 1 multiplies, else step_bytes is added
  std::size_t step_bytes = 1u << 20;  // -i
  std::vector<weft::DType> dtypes{weft::DType::kFloat32};          // -d
  std::vector<weft::ReduceOp::Kind> redops{weft::ReduceOp::kSum};  // -o
  int root = 0;                                                    // -r
  int warmup_iters = 1;                                            // -w
  long iters = 20;                                                 // -n
  bool iters_given = false;        // -n on the command line: fixed iterations win
  bool check = true;               // -c
  bool async = false;              // -a: the i* forms
  bool blocking = false;           // -z: with -a, wait for each op before the next
  std::string algorithm;           // --algo
  std::size_t segment_bytes = 0;   // --segment-bytes
  std::string json_path;           // --json
  std::string csv_path;            // --csv
  std::string plot_path;           // --plot: a PNG of busbw against size (plot.h)
  std::string config = "default";  // --config
  double target_seconds = 0;       // --target-seconds; > 0 and no -n: adaptive iterations
  long min_iters = 3;              // --min-iters (adaptive)
  long max_iters = 1000000;        // --max-iters (adaptive)
  int cores = 0;                   // --cores; 0: online CPUs of rank 0
  double premul_factor = 2.0;      // the factor of premul_sum (exact for the check data)
  bool show_help = false;          // -h: print usage_text() and run nothing

  bool adaptive() const { return target_seconds > 0 && !iters_given; }
};

BenchOptions parse_options(int argc, char** argv);
std::string usage_text();

}  // namespace weft_bench
