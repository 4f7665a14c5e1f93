// Machine-readable outputs, written by rank 0 only.
//
// JsonReport (--json FILE): JSON Lines. The first object is the run's settings
// ({"type":"settings",...}); then one {"type":"result",...} per measured cell (a row's
// out-of-place and in-place cells are separate objects, "placement" tells which) and one
// {"type":"skipped",...} per combination weft refused.
// CsvReport (--csv FILE): the anchors' schema (shared/anchors/README.md), one line per row,
// from the cell the anchors measure (in place for all_reduce, broadcast and reduce, out of
// place for the others). op is the anchors' name, with "_<redop>" appended for reduce ops
// other than sum, so that rows of different reduce ops never look alike.
#pragma once

#include <cstdio>
#include <string>

#include "options.h"
#include "result_row.h"

namespace weft_bench {

class JsonReport {
 public:
  // Opens (truncates) path; throws std::runtime_error if it cannot.
  JsonReport(const std::string& path, const BenchOptions& options, const RunInfo& info);
  ~JsonReport();
  void row(const ResultRow& row);
  void skipped(BenchOp op, weft::DType dtype, weft::ReduceOp::Kind redop,
               const std::string& reason);

 private:
  std::FILE* file_;
};

class CsvReport {
 public:
  CsvReport(const std::string& path, const BenchOptions& options, const RunInfo& info);
  ~CsvReport();
  void row(const ResultRow& row);

 private:
  std::FILE* file_;
  std::string config_;
  int ranks_;
  int cores_;
};

}  // namespace weft_bench
