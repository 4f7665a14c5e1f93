#include "flight_report.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace weft::run {

FlightDir::FlightDir() {
  if (const char* given = std::getenv("WEFT_FLIGHT_DIR"); given != nullptr && *given != '\0') {
    path_ = given;
    return;
  }
  std::string pattern = (std::filesystem::temp_directory_path() / "weftrun_flight.XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) return;  // no report, the job runs all the same
  path_ = pattern;
  owned_ = true;
  ::setenv("WEFT_FLIGHT_DIR", path_.c_str(), 1);
}

FlightDir::~FlightDir() {
  if (!owned_) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string FlightOp::field(const std::string& key) const {
  auto it = fields.find(key);
  return it == fields.end() ? "" : it->second;
}

std::string FlightOp::cell() const {
  std::string seq = field("seq");
  std::string first = seq.empty() || seq == "-1" ? "p2p" : seq;
  std::string op = field("op");
  std::string peer = field("peer");
  if (first == "p2p" && !peer.empty() && peer != "-1") op += "(" + peer + ")";
  std::string group = field("group");
  // Child groups are named after their parent ("default/g123"): say which one ran the op.
  std::string where = group.find('/') != std::string::npos ? " [" + group + "]" : "";
  return first + " " + op + " " + field("bytes") + "B " + field("state") + where;
}

std::vector<FlightOp> parse_flight_dump(const std::string& text) {
  std::vector<FlightOp> ops;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    FlightOp op;
    std::istringstream words(line);
    for (std::string word; words >> word;) {
      auto equals = word.find('=');
      if (equals != std::string::npos) op.fields[word.substr(0, equals)] = word.substr(equals + 1);
    }
    if (!op.field("op").empty()) ops.push_back(std::move(op));
  }
  auto start = [](const FlightOp& op) {
    std::string text = op.field("start_us");
    return text.empty() ? 0LL : std::atoll(text.c_str());
  };
  std::stable_sort(ops.begin(), ops.end(),
                   [&](const FlightOp& a, const FlightOp& b) { return start(a) < start(b); });
  return ops;
}

std::string format_flight_table(const std::map<int, std::optional<std::vector<FlightOp>>>& ranks,
                                std::size_t rows) {
  std::vector<std::vector<std::string>> columns;
  for (const auto& [rank, ops] : ranks) {
    std::vector<std::string> column{"rank " + std::to_string(rank)};
    if (!ops) {
      column.push_back("(no dump)");
    } else if (ops->empty()) {
      column.push_back("(no ops)");
    } else {
      std::size_t first = ops->size() > rows ? ops->size() - rows : 0;
      for (std::size_t i = first; i < ops->size(); ++i) column.push_back((*ops)[i].cell());
    }
    columns.push_back(std::move(column));
  }
  std::size_t height = 0;
  std::vector<std::size_t> widths;
  for (const auto& column : columns) {
    height = std::max(height, column.size());
    std::size_t width = 0;
    for (const auto& cell : column) width = std::max(width, cell.size());
    widths.push_back(width);
  }
  std::string table;
  for (std::size_t row = 0; row < height; ++row) {
    std::string line = " ";
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const auto& column = columns[c];
      // The header on the first row; the ops bottom-aligned, so the newest share the last row.
      std::string cell;
      if (row == 0) {
        cell = column[0];
      } else {
        std::size_t from_bottom = height - row;
        if (from_bottom <= column.size() - 1) cell = column[column.size() - from_bottom];
      }
      line += (c == 0 ? " " : " | ") + cell + std::string(widths[c] - cell.size(), ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    table += line + "\n";
  }
  return table;
}

std::string flight_table_from(const std::string& dir, const std::vector<int>& ranks,
                              std::size_t rows) {
  std::map<int, std::optional<std::vector<FlightOp>>> dumps;
  bool any = false;
  for (int rank : ranks) {
    std::ifstream in(dir + "/rank" + std::to_string(rank) + ".txt");
    if (!in) {
      dumps[rank] = std::nullopt;
      continue;
    }
    std::stringstream text;
    text << in.rdbuf();
    dumps[rank] = parse_flight_dump(text.str());
    any = true;
  }
  return any ? format_flight_table(dumps, rows) : "";
}

}  // namespace weft::run
