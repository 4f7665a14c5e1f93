#include "trace_merge.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>
#include <vector>

namespace weft::run {

namespace fs = std::filesystem;

namespace {

// A rank's file as src/core/trace_writer.cc writes it, read a line at a time: a long job's
// timeline is many times the memory a launcher should take. The format: a first line
// `{"otherData":{...},`, then `"traceEvents":[`, then one event object per line (each but the
// last followed by a comma), then `]}`.
class RankTraceReader {
 public:
  explicit RankTraceReader(const fs::path& path) : path_(path), in_(path) {
    std::string header;
    std::string events;
    if (!std::getline(in_, header) || !std::getline(in_, events) || events != "\"traceEvents\":[" ||
        header.rfind("{\"otherData\":", 0) != 0 || header.back() != ',') {
      fail("its first lines are not weft's otherData and traceEvents");
    }
    header.back() = '}';
    try {
      clock_offset_us_ =
          nlohmann::json::parse(header).value("/otherData/clock_offset_us"_json_pointer, 0.0);
    } catch (const nlohmann::json::exception& error) {
      fail(error.what());
    }
  }

  double clock_offset_us() const { return clock_offset_us_; }

  // The next event, its trailing comma removed; false after the last.
  bool next_event(std::string* line) {
    if (!std::getline(in_, *line)) fail("it ends before its closing ]}");
    if (*line == "]}") return false;
    if (!line->empty() && line->back() == ',') line->pop_back();
    if (line->size() < 2 || line->front() != '{' || line->back() != '}') {
      fail("a line is not one event: " + line->substr(0, 80));
    }
    return true;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error(path_.string() + " is not a rank's trace: " + why);
  }

  fs::path path_;
  std::ifstream in_;
  double clock_offset_us_ = 0;
};

// Where an event's "ts" value lies in its line. Strings in an event escape their quotes, so
// the first `"ts":` is the key.
struct TsField {
  std::size_t begin = std::string::npos;
  std::size_t end = std::string::npos;
  double value = 0;
};

TsField find_ts(const std::string& line) {
  TsField field;
  std::size_t key = line.find("\"ts\":");
  if (key == std::string::npos) return field;
  const char* start = line.c_str() + key + 5;
  char* stop = nullptr;
  field.value = std::strtod(start, &stop);
  if (stop == start) return field;
  field.begin = key + 5;
  field.end = static_cast<std::size_t>(stop - line.c_str());
  return field;
}

std::string number(double value) {
  char text[64];
  auto [end, error] = std::to_chars(text, text + sizeof text, value);
  return std::string(text, error == std::errc() ? end : text);
}

std::vector<fs::path> rank_files(const std::string& dir) {
  static const std::regex kRankFile(R"(rank(\d+)\.json)");
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (std::regex_match(entry.path().filename().string(), kRankFile))
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

MergeResult merge_rank_traces(const std::string& dir) {
  MergeResult result;
  const std::vector<fs::path> files = rank_files(dir);
  if (files.empty()) return result;
  // First pass: the job starts at 0 on the merged axis.
  double first = std::numeric_limits<double>::infinity();
  std::string line;
  for (const fs::path& file : files) {
    RankTraceReader reader(file);
    while (reader.next_event(&line)) {
      TsField ts = find_ts(line);
      if (ts.begin != std::string::npos) {
        first = std::min(first, ts.value + reader.clock_offset_us());
      }
    }
  }
  result.path = (fs::path(dir) / "trace.json").string();
  std::ofstream out(result.path);
  out << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"weft_ranks\":" << files.size()
      << "},\n\"traceEvents\":[\n";
  bool comma = false;
  for (const fs::path& file : files) {
    RankTraceReader reader(file);
    while (reader.next_event(&line)) {
      TsField ts = find_ts(line);
      if (ts.begin != std::string::npos) {
        line.replace(ts.begin, ts.end - ts.begin,
                     number(ts.value + reader.clock_offset_us() - first));
      }
      if (line.find("\"ph\":\"X\"") != std::string::npos) ++result.events;
      out << (comma ? ",\n" : "") << line;
      comma = true;
    }
    ++result.ranks;
  }
  out << "\n]}\n";
  if (!out) throw std::runtime_error("cannot write " + result.path);
  return result;
}

}  // namespace weft::run
