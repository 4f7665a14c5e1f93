// weft-trace summary: per op, how many ran, how many bytes, how long (percentiles over every
// rank's calls), and which rank holds the others up.
//
// Two answers to "which rank is slow", because they differ: the rank whose calls take longest
// on average (slowest_rank) is usually a *waiting* rank, while the rank that holds a collective
// up arrives last and then waits least. last_arrival counts, per collective call (group, seq),
// which rank started it last, and names the rank that did so most often.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "trace_events.h"

namespace weft_trace {

struct OpSummary {
  std::string op;
  int64_t count = 0;
  int64_t total_bytes = 0;
  double p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0;
  int slowest_rank = -1;  // highest mean duration
  double slowest_mean_us = 0;
  int last_arrival_rank = -1;  // started last most often (collectives of 2+ ranks)
  int64_t last_arrivals = 0;   // how often it did
  int64_t calls = 0;           // collective calls (group, seq) seen on 2+ ranks
};

// Nearest-rank percentile of sorted values (p in (0, 100]).
double percentile(const std::vector<double>& sorted, double p);

// Takes a trace's ops one at a time and keeps per op name only what the summary needs: each
// call's duration (for the percentiles), per-rank totals, and per collective call the rank that
// started it last so far.
class SummaryBuilder {
 public:
  void add(const TraceOp& op);
  // One summary per op name, by name.
  std::vector<OpSummary> summaries() const;

 private:
  struct Arrival {
    double start_us = -1;
    int rank = -1;
    int ranks = 0;
  };
  struct PerOp {
    int64_t count = 0;
    int64_t total_bytes = 0;
    std::vector<double> durations;
    std::map<int, std::pair<double, int64_t>> per_rank;         // total duration, count
    std::map<std::tuple<std::string, int64_t>, Arrival> calls;  // by (group, seq)
  };
  static OpSummary summarize(const std::string& name, const PerOp& op);

  std::map<std::string, PerOp> by_op_;
};

// The table weft-trace prints.
std::string format_summary(const std::vector<OpSummary>& summaries);

}  // namespace weft_trace
