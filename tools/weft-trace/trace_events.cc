#include "trace_events.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>

namespace weft_trace {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void read_file(const fs::path& file, std::vector<TraceOp>& ops) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  json trace;
  try {
    trace = json::parse(in);
  } catch (const json::exception& error) {
    throw std::runtime_error(file.string() + " is not JSON: " + error.what());
  }
  // A rank's own file carries its offset to rank 0's clock; weftrun's merge applied them.
  double offset = trace.value("/otherData/clock_offset_us"_json_pointer, 0.0);
  if (!trace.contains("traceEvents"))
    throw std::runtime_error(file.string() + " has no traceEvents");
  for (const json& event : trace["traceEvents"]) {
    if (event.value("ph", "") != "X") continue;
    const json& args = event.contains("args") ? event["args"] : json::object();
    TraceOp op;
    op.rank = event.value("pid", 0);
    op.op = args.value("op", event.value("name", ""));
    op.group = args.value("group", "");
    op.seq = args.value("seq", int64_t{-1});
    op.bytes = args.value("bytes", int64_t{0});
    op.start_us = event.value("ts", 0.0) + offset;
    op.duration_us = event.value("dur", 0.0);
    ops.push_back(std::move(op));
  }
}

}  // namespace

std::vector<TraceOp> load_trace(const std::string& path) {
  std::vector<TraceOp> ops;
  if (!fs::is_directory(path)) {
    read_file(path, ops);
    return ops;
  }
  if (fs::exists(fs::path(path) / "trace.json")) {
    read_file(fs::path(path) / "trace.json", ops);
    return ops;
  }
  static const std::regex kRankFile(R"(rank\d+\.json)");
  bool any = false;
  for (const auto& entry : fs::directory_iterator(path)) {
    if (!std::regex_match(entry.path().filename().string(), kRankFile)) continue;
    read_file(entry.path(), ops);
    any = true;
  }
  if (!any) throw std::runtime_error(path + " holds no trace.json and no rank<R>.json");
  return ops;
}

}  // namespace weft_trace
