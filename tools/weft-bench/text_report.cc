#include "text_report.h"

#include <string>
#include <vector>

#include "weft/version.h"

namespace weft_bench {
namespace {

std::string time_text(double us) {
  char text[32];
  if (us >= 10000.0)
    std::snprintf(text, sizeof text, "%7.0f", us);
  else if (us >= 100.0)
    std::snprintf(text, sizeof text, "%7.1f", us);
  else
    std::snprintf(text, sizeof text, "%7.2f", us);
  return text;
}

// Appends piece by piece: GCC 12 warns falsely (-Wrestrict) about "literal" + std::string.
template <typename T, typename F>
std::string join(const std::vector<T>& items, F name) {
  std::string s;
  for (const T& item : items) {
    if (!s.empty()) s += ',';
    s += name(item);
  }
  return s;
}

std::string join_dtypes(const BenchOptions& o) {
  return join(o.dtypes, [](weft::DType d) { return std::string(weft::name_of(d)); });
}

std::string join_redops(const BenchOptions& o) {
  return join(o.redops, [](weft::ReduceOp::Kind k) { return redop_label(k); });
}

std::string join_ops(const BenchOptions& o) {
  return join(o.ops, [](BenchOp op) { return std::string(traits_of(op).name); });
}

}  // namespace

std::string redop_label(weft::ReduceOp::Kind kind) {
  if (kind == weft::ReduceOp::kProduct) return "prod";
  return std::string(weft::name_of(kind));
}

void TextReport::header(const BenchOptions& o, const RunInfo& info) {
  std::fprintf(out_, "# weft-bench %s (weft %s): %s\n", join_ops(o).c_str(), weft::version(),
               o.adaptive() ? "adaptive iterations" : "fixed iterations");
  std::fprintf(out_, "# nRanks %d nCores %d minBytes %zu maxBytes %zu step: %zu(%s)", info.ranks,
               info.cores, o.min_bytes, o.max_bytes,
               o.step_factor > 1 ? o.step_factor : o.step_bytes,
               o.step_factor > 1 ? "factor" : "bytes");
  if (o.adaptive()) {
    std::fprintf(out_, " target: %gs iters: [%ld, %ld]", o.target_seconds, o.min_iters,
                 o.max_iters);
  } else {
    std::fprintf(out_, " warmup iters: %d iters: %ld", o.warmup_iters, o.iters);
  }
  std::fprintf(out_, " validation: %d\n", o.check ? 1 : 0);
  std::fprintf(out_, "# dtype: %s redop: %s root: %d calls: %s algo: %s segment: %zu\n",
               join_dtypes(o).c_str(), join_redops(o).c_str(), o.root,
               !o.async ? "blocking" : (o.blocking ? "async, wait each" : "async, pipelined"),
               o.algorithm.empty() ? "(selector)" : o.algorithm.c_str(), o.segment_bytes);
  std::fprintf(out_, "#\n# Using ranks\n");
  for (std::size_t r = 0; r < info.rank_lines.size(); ++r) {
    std::fprintf(out_, "#  Rank %2zu %s\n", r, info.rank_lines[r].c_str());
  }
  std::fprintf(out_, "#\n");
  std::fflush(out_);
}

void TextReport::table_header(BenchOp op) {
  std::fprintf(out_, "# %s\n", std::string(traits_of(op).name).c_str());
  std::fprintf(out_,
               "# %10s  %12s  %8s  %6s  %6s           out-of-place                       "
               "in-place          \n",
               "", "", "", "", "");
  std::fprintf(out_, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size",
               "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
               "algbw", "busbw", "#wrong");
  std::fprintf(out_, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)",
               "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
               "");
  std::fflush(out_);
}

void TextReport::row(const ResultRow& r) {
  const OpTraits& t = traits_of(r.op);
  const std::string redop = t.reduces ? redop_label(r.redop) : "none";
  std::fprintf(out_, "%12zu  %12zu  %8s  %6s  %6d", r.shape.bytes, r.shape.count,
               std::string(weft::name_of(r.dtype)).c_str(), redop.c_str(), r.root);
  for (const Cell* c : {&r.out_of_place, &r.in_place}) {
    if (!c->measured) {
      std::fprintf(out_, "  %7s  %6s  %6s  %5s", "N/A", "N/A", "N/A", "N/A");
      continue;
    }
    const std::string wrong = c->checked ? std::to_string(c->wrong) : "N/A";
    std::fprintf(out_, "  %7s  %6.2f  %6.2f  %5s", time_text(c->timing.time_us).c_str(),
                 c->algbw_GBps, c->busbw_GBps, wrong.c_str());
    if (r.op != BenchOp::kBarrier) {
      busbw_sum_ += c->busbw_GBps;
      ++busbw_cells_;
    }
  }
  std::fprintf(out_, "\n");
  std::fflush(out_);
}

void TextReport::skipped(const std::string& what, const std::string& reason) {
  std::fprintf(out_, "# skipped %s: %s\n", what.c_str(), reason.c_str());
  std::fflush(out_);
}

double TextReport::footer(uint64_t wrong_rows) {
  const double avg = busbw_cells_ > 0 ? busbw_sum_ / busbw_cells_ : 0.0;
  std::fprintf(out_, "# Rows with wrong elements: %llu %s\n",
               static_cast<unsigned long long>(wrong_rows), wrong_rows == 0 ? "OK" : "FAILED");
  std::fprintf(out_, "# Avg bus bandwidth    : %g \n", avg);
  std::fprintf(out_, "#\n");
  std::fflush(out_);
  return avg;
}

}  // namespace weft_bench
