// FlightReport — the ranks' last operations side by side, printed when a job fails or is
// interrupted (docs/weftrun.md, docs/observability.md "Flight recorder").
//
// weftrun gives the ranks WEFT_FLIGHT_DIR, a directory of its own (removed at exit); a rank
// writes its flight recorder there as rank<R>.txt when a collective times out or a peer fails,
// and when it is stopped by SIGTERM/SIGINT. After the ranks have ended, weftrun reads those
// files and prints one column per rank.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace weft::run {

// The directory handed to the ranks: made by weftrun (and removed with its files when this
// object goes), or the user's own WEFT_FLIGHT_DIR (left alone).
class FlightDir {
 public:
  // Sets WEFT_FLIGHT_DIR in weftrun's environment, which the ranks inherit.
  FlightDir();
  ~FlightDir();
  FlightDir(const FlightDir&) = delete;
  FlightDir& operator=(const FlightDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool owned_ = false;
};

// One line of a rank's dump (core/op_record_text.h): key=value fields.
struct FlightOp {
  std::map<std::string, std::string> fields;
  std::string field(const std::string& key) const;
  // "12 all_reduce 8B done": what a cell of the table shows.
  std::string cell() const;
};

// The ops in a dump file's text, oldest first (by start time, over all its groups).
std::vector<FlightOp> parse_flight_dump(const std::string& text);

// The table: a header with one column per rank, then the last `rows` ops of each rank,
// newest last, aligned at the bottom. A rank without a dump shows "(no dump)".
std::string format_flight_table(const std::map<int, std::optional<std::vector<FlightOp>>>& ranks,
                                std::size_t rows);

// Reads dir/rank<R>.txt for each rank and returns the table ("" when no rank left a dump).
std::string flight_table_from(const std::string& dir, const std::vector<int>& ranks,
                              std::size_t rows = 8);

}  // namespace weft::run
