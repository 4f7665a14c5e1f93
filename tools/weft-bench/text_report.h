// nccl-tests' text output on rank 0's stdout: the settings, the ranks, one table per op
// (size count type redop root, then time algbw busbw #wrong out of place and in place), and
// the average bus bandwidth at the end.
#pragma once

#include <cstdio>
#include <string>

#include "options.h"
#include "result_row.h"

namespace weft_bench {

class TextReport {
 public:
  explicit TextReport(std::FILE* out) : out_(out) {}

  void header(const BenchOptions& options, const RunInfo& info);
  void table_header(BenchOp op);
  void row(const ResultRow& row);
  void skipped(const std::string& what, const std::string& reason);
  // Returns the average bus bandwidth it printed.
  double footer(uint64_t wrong_rows);

 private:
  std::FILE* out_;
  double busbw_sum_ = 0;
  int busbw_cells_ = 0;
};

// nccl-tests' spelling of a reduce op for the table ("prod" rather than weft's "product").
std::string redop_label(weft::ReduceOp::Kind kind);

}  // namespace weft_bench
