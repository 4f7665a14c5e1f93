#include "file_reports.h"

#include <cerrno>
#include <cstring>
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

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) {
          char esc[8];
          std::snprintf(esc, sizeof esc, "\\u%04x", ch);
          out += esc;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
  return out;
}

std::string number(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

// One JSON object on one line, built by appending (GCC 12 warns falsely about
// "literal" + std::string chains).
class JsonLine {
 public:
  JsonLine& raw(std::string_view key, std::string_view json) {
    text_ += text_.size() > 1 ? ",\"" : "\"";
    text_ += key;
    text_ += "\":";
    text_ += json;
    return *this;
  }
  JsonLine& str(std::string_view key, std::string_view value) { return raw(key, quoted(value)); }
  JsonLine& num(std::string_view key, double value) { return raw(key, number(value)); }
  JsonLine& integer(std::string_view key, long long value) {
    return raw(key, std::to_string(value));
  }
  JsonLine& boolean(std::string_view key, bool value) { return raw(key, value ? "true" : "false"); }
  template <typename T, typename F>
  JsonLine& list(std::string_view key, const std::vector<T>& items, F name) {
    std::string s = "[";
    for (const T& item : items) {
      if (s.size() > 1) s += ',';
      s += quoted(name(item));
    }
    s += ']';
    return raw(key, s);
  }
  void write(std::FILE* f) {
    std::fprintf(f, "%s}\n", text_.c_str());
    std::fflush(f);
  }

 private:
  std::string text_ = "{";
};

const Cell& csv_cell(const ResultRow& r) {
  const bool in_place = traits_of(r.op).csv_in_place;
  const Cell& preferred = in_place ? r.in_place : r.out_of_place;
  return preferred.measured ? preferred : (in_place ? r.out_of_place : r.in_place);
}

}  // namespace

JsonReport::JsonReport(const std::string& path, const BenchOptions& o, const RunInfo& info)
    : file_(open_for_writing(path, "--json")) {
  JsonLine line;
  line.str("type", "settings")
      .str("tool", "weft-bench")
      .str("weft_version", weft::version_string())
      .integer("ranks", info.ranks)
      .integer("cores", info.cores)
      .list("ops", o.ops, [](BenchOp op) { return std::string(traits_of(op).name); })
      .list("dtypes", o.dtypes, [](weft::DType d) { return std::string(weft::name_of(d)); })
      .list("redops", o.redops, [](weft::ReduceOp::Kind k) { return redop_label(k); })
      .integer("min_bytes", static_cast<long long>(o.min_bytes))
      .integer("max_bytes", static_cast<long long>(o.max_bytes))
      .integer("step_factor", static_cast<long long>(o.step_factor))
      .integer("step_bytes", static_cast<long long>(o.step_bytes))
      .integer("root", o.root)
      .str("iteration_mode", o.adaptive() ? "adaptive" : "fixed")
      .integer("warmup_iters", o.warmup_iters)
      .integer("iters", o.iters)
      .num("target_seconds", o.target_seconds)
      .integer("min_iters", o.min_iters)
      .integer("max_iters", o.max_iters)
      .boolean("check", o.check)
      .boolean("async", o.async)
      .boolean("blocking", o.blocking)
      .str("algorithm", o.algorithm)
      .integer("segment_bytes", static_cast<long long>(o.segment_bytes))
      .num("premul_factor", o.premul_factor)
      .str("config", o.config)
      .list("rank_hosts", info.rank_lines, [](const std::string& l) { return l; })
      .write(file_);
}

JsonReport::~JsonReport() { std::fclose(file_); }

void JsonReport::row(const ResultRow& r) {
  const OpTraits& t = traits_of(r.op);
  for (const Cell* c : {&r.out_of_place, &r.in_place}) {
    if (!c->measured) continue;
    JsonLine line;
    line.str("type", "result")
        .str("op", t.name)
        .str("placement", c == &r.in_place ? "in-place" : "out-of-place")
        .str("dtype", weft::name_of(r.dtype))
        .raw("redop", t.reduces ? quoted(redop_label(r.redop)) : "null")
        .integer("root", r.root)
        .integer("size", static_cast<long long>(r.shape.bytes))
        .integer("count", static_cast<long long>(r.shape.count))
        .integer("iters", c->timing.iters)
        .integer("batches", c->timing.batches)
        .num("time_us", c->timing.time_us)
        .num("med_us", c->timing.med_us)
        .num("min_us", c->timing.min_us)
        .num("max_us", c->timing.max_us)
        .num("algbw_GBps", c->algbw_GBps)
        .num("busbw_GBps", c->busbw_GBps)
        .raw("wrong", c->checked ? std::to_string(c->wrong) : "null")
        .write(file_);
  }
}

void JsonReport::skipped(BenchOp op, weft::DType dtype, weft::ReduceOp::Kind redop,
                         const std::string& reason) {
  const OpTraits& t = traits_of(op);
  JsonLine line;
  line.str("type", "skipped")
      .str("op", t.name)
      .str("dtype", weft::name_of(dtype))
      .raw("redop", t.reduces ? quoted(redop_label(redop)) : "null")
      .str("reason", reason)
      .write(file_);
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
