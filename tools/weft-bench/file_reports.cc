#include "file_reports.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "text_report.h"
#include "weft/version.h"

namespace weft_bench {
namespace {

std::FILE* open_for_writing(const std::string& path, const char* flag) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    throw std::runtime_error(std::string(flag) + ": cannot write '" + path +
                             "': " + std::strerror(errno));
  }
  return f;
}

// Insertion order, so that every line starts with "type" as readers (and grep) expect.
using Json = nlohmann::ordered_json;

// One object per line. replace, not throw, on bytes that are not UTF-8: a host name or a
// --config tag is not worth losing the report over.
void write_line(std::FILE* f, const Json& object) {
  const std::string text = object.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::fprintf(f, "%s\n", text.c_str());
  std::fflush(f);
}

// Six significant digits, as these files had before nlohmann_json wrote them: the timers are
// not finer, and 0.26970000000000005 reads as noise. nlohmann writes the shortest text that
// reads back as the same double, so the rounded value comes out as 0.2697.
double six_digits(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return std::strtod(text, nullptr);
}

template <typename T, typename F>
Json names_of(const std::vector<T>& items, F name) {
  Json list = Json::array();
  for (const T& item : items) list.push_back(name(item));
  return list;
}

// The reduce op of a row, or null for ops that do not reduce.
Json redop_of(const OpTraits& traits, weft::ReduceOp::Kind redop) {
  return traits.reduces ? Json(redop_label(redop)) : Json(nullptr);
}

const Cell& csv_cell(const ResultRow& r) {
  const bool in_place = traits_of(r.op).csv_in_place;
  const Cell& preferred = in_place ? r.in_place : r.out_of_place;
  return preferred.measured ? preferred : (in_place ? r.out_of_place : r.in_place);
}

}  // namespace

JsonReport::JsonReport(const std::string& path, const BenchOptions& o, const RunInfo& info)
    : file_(open_for_writing(path, "--json")) {
  write_line(
      file_,
      Json{{"type", "settings"},
           {"tool", "weft-bench"},
           {"weft_version", weft::version()},
           {"ranks", info.ranks},
           {"cores", info.cores},
           {"ops", names_of(o.ops, [](BenchOp op) { return std::string(traits_of(op).name); })},
           {"dtypes",
            names_of(o.dtypes, [](weft::DType d) { return std::string(weft::name_of(d)); })},
           {"redops", names_of(o.redops, [](weft::ReduceOp::Kind k) { return redop_label(k); })},
           {"min_bytes", o.min_bytes},
           {"max_bytes", o.max_bytes},
           {"step_factor", o.step_factor},
           {"step_bytes", o.step_bytes},
           {"root", o.root},
           {"iteration_mode", o.adaptive() ? "adaptive" : "fixed"},
           {"warmup_iters", o.warmup_iters},
           {"iters", o.iters},
           {"target_seconds", six_digits(o.target_seconds)},
           {"min_iters", o.min_iters},
           {"max_iters", o.max_iters},
           {"check", o.check},
           {"async", o.async},
           {"blocking", o.blocking},
           {"algorithm", o.algorithm},
           {"segment_bytes", o.segment_bytes},
           {"premul_factor", six_digits(o.premul_factor)},
           {"config", o.config},
           {"rank_hosts", info.rank_lines}});
}

JsonReport::~JsonReport() { std::fclose(file_); }

void JsonReport::row(const ResultRow& r) {
  const OpTraits& t = traits_of(r.op);
  for (const Cell* c : {&r.out_of_place, &r.in_place}) {
    if (!c->measured) continue;
    write_line(file_, Json{{"type", "result"},
                           {"op", t.name},
                           {"placement", c == &r.in_place ? "in-place" : "out-of-place"},
                           {"dtype", weft::name_of(r.dtype)},
                           {"redop", redop_of(t, r.redop)},
                           {"root", r.root},
                           {"size", r.shape.bytes},
                           {"count", r.shape.count},
                           {"iters", c->timing.iters},
                           {"batches", c->timing.batches},
                           {"time_us", six_digits(c->timing.time_us)},
                           {"med_us", six_digits(c->timing.med_us)},
                           {"min_us", six_digits(c->timing.min_us)},
                           {"max_us", six_digits(c->timing.max_us)},
                           {"algbw_GBps", six_digits(c->algbw_GBps)},
                           {"busbw_GBps", six_digits(c->busbw_GBps)},
                           {"wrong", c->checked ? Json(c->wrong) : Json(nullptr)}});
  }
}

void JsonReport::skipped(BenchOp op, weft::DType dtype, weft::ReduceOp::Kind redop,
                         const std::string& reason) {
  const OpTraits& t = traits_of(op);
  write_line(file_, Json{{"type", "skipped"},
                         {"op", t.name},
                         {"dtype", weft::name_of(dtype)},
                         {"redop", redop_of(t, redop)},
                         {"reason", reason}});
}

CsvReport::CsvReport(const std::string& path, const BenchOptions& o, const RunInfo& info)
    : file_(open_for_writing(path, "--csv")),
      config_(o.config),
      ranks_(info.ranks),
      cores_(info.cores) {
  std::fprintf(file_,
               "system,config,ranks,cores,oversub,op,dtype,count,bytes,iters,time_us,med_us,"
               "min_us,max_us,algbw_GBps,busbw_GBps,check\n");
  std::fflush(file_);
}

CsvReport::~CsvReport() { std::fclose(file_); }

void CsvReport::row(const ResultRow& r) {
  const OpTraits& t = traits_of(r.op);
  const Cell& c = csv_cell(r);
  if (!c.measured) return;
  std::string op(t.csv_name);
  if (t.reduces && r.redop != weft::ReduceOp::kSum) {
    op += '_';
    op += redop_label(r.redop);
  }
  const char* check = !c.checked ? "skip" : (c.wrong == 0 ? "ok" : "FAIL");
  std::fprintf(file_, "weft,%s,%d,%d,%d,%s,%s,%zu,%zu,%ld,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f,%s\n",
               config_.c_str(), ranks_, cores_, ranks_ > cores_ ? 1 : 0, op.c_str(),
               std::string(weft::name_of(r.dtype)).c_str(), r.shape.count, r.shape.bytes,
               c.timing.iters, c.timing.time_us, c.timing.med_us, c.timing.min_us, c.timing.max_us,
               c.algbw_GBps, c.busbw_GBps, check);
  std::fflush(file_);
}

}  // namespace weft_bench
