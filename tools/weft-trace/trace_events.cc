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

TraceOp op_of(const json& event, double clock_offset_us) {
  const json& args = event.contains("args") ? event["args"] : json::object();
  TraceOp op;
  op.rank = event.value("pid", 0);
  op.op = args.value("op", event.value("name", ""));
  op.group = args.value("group", "");
  op.seq = args.value("seq", int64_t{-1});
  op.bytes = args.value("bytes", int64_t{0});
  op.start_us = event.value("ts", 0.0) + clock_offset_us;
  op.duration_us = event.value("dur", 0.0);
  return op;
}

// Parses one file, keeping nothing of it but its clock offset: every element of traceEvents is
// dropped from the document once it is handed on.
void read_file(const fs::path& file, const std::function<void(const TraceOp&)>& visit) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  std::string top_key;         // the member of the document being parsed
  double clock_offset_us = 0;  // a rank's own file carries it; weftrun's merge applied them
  bool has_events = false;
  auto on_element = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key) top_key = parsed.get<std::string>();
    if (event != json::parse_event_t::object_end && event != json::parse_event_t::array_end)
      return true;
    if (depth == 1 && top_key == "otherData" && parsed.is_object())
      clock_offset_us = parsed.value("clock_offset_us", 0.0);
    if (depth == 1 && top_key == "traceEvents") has_events = true;
    if (depth == 2 && top_key == "traceEvents" && event == json::parse_event_t::object_end) {
      if (parsed.value("ph", "") == "X") visit(op_of(parsed, clock_offset_us));
      return false;
    }
    return true;
  };
  try {
    json kept = json::parse(in, on_element);  // the document less its events
  } catch (const json::exception& error) {
    throw std::runtime_error(file.string() + " is not JSON: " + error.what());
  }
  if (!has_events) throw std::runtime_error(file.string() + " has no traceEvents");
}

}  // namespace

void for_each_trace_op(const std::string& path, const std::function<void(const TraceOp&)>& visit) {
  if (!fs::is_directory(path)) {
    read_file(path, visit);
    return;
  }
  if (fs::exists(fs::path(path) / "trace.json")) {
    read_file(fs::path(path) / "trace.json", visit);
    return;
  }
  static const std::regex kRankFile(R"(rank\d+\.json)");
  bool any = false;
  for (const auto& entry : fs::directory_iterator(path)) {
    if (!std::regex_match(entry.path().filename().string(), kRankFile)) continue;
    read_file(entry.path(), visit);
    any = true;
  }
  if (!any) throw std::runtime_error(path + " holds no trace.json and no rank<R>.json");
}

}  // namespace weft_trace
