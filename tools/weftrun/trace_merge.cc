#include "trace_merge.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>
#include <vector>

namespace weft::run {

namespace fs = std::filesystem;
using nlohmann::json;

MergeResult merge_rank_traces(const std::string& dir) {
  MergeResult result;
  json events = json::array();
  static const std::regex kRankFile(R"(rank(\d+)\.json)");
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (std::regex_match(entry.path().filename().string(), kRankFile))
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    std::ifstream in(file);
    json trace;
    try {
      trace = json::parse(in);
    } catch (const json::exception& error) {
      throw std::runtime_error(file.string() + " is not a rank's trace: " + error.what());
    }
    double offset = trace.value("/otherData/clock_offset_us"_json_pointer, 0.0);
    for (json& event : trace.at("traceEvents")) {
      if (event.contains("ts")) event["ts"] = event["ts"].get<double>() + offset;
      if (event.value("ph", "") == "X") ++result.events;
      events.push_back(std::move(event));
    }
    ++result.ranks;
  }
  // The job starts at 0 on the merged axis.
  double first = std::numeric_limits<double>::infinity();
  for (const json& event : events) {
    if (event.contains("ts")) first = std::min(first, event["ts"].get<double>());
  }
  std::string text =
      "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"weft_ranks\":" + std::to_string(result.ranks) +
      "},\n\"traceEvents\":[\n";
  bool comma = false;
  for (json& event : events) {
    if (event.contains("ts")) event["ts"] = event["ts"].get<double>() - first;
    text += (comma ? ",\n" : "") + event.dump();
    comma = true;
  }
  text += "\n]}\n";
  result.path = (fs::path(dir) / "trace.json").string();
  std::ofstream out(result.path);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + result.path);
  return result;
}

}  // namespace weft::run
