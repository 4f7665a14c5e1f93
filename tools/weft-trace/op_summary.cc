#include "op_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace weft_trace {

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

void SummaryBuilder::add(const TraceOp& op) {
  PerOp& summary = by_op_[op.op];
  ++summary.count;
  summary.total_bytes += op.bytes;
  summary.durations.push_back(op.duration_us);
  auto& [total, count] = summary.per_rank[op.rank];
  total += op.duration_us;
  ++count;
  if (op.seq < 0) return;
  Arrival& call = summary.calls[{op.group, op.seq}];
  ++call.ranks;
  if (op.start_us > call.start_us) {
    call.start_us = op.start_us;
    call.rank = op.rank;
  }
}

std::vector<OpSummary> SummaryBuilder::summaries() const {
  std::vector<OpSummary> summaries;
  for (const auto& [name, op] : by_op_) summaries.push_back(summarize(name, op));
  return summaries;
}

OpSummary SummaryBuilder::summarize(const std::string& name, const PerOp& op) {
  OpSummary summary;
  summary.op = name;
  summary.count = op.count;
  summary.total_bytes = op.total_bytes;
  std::vector<double> durations = op.durations;
  std::sort(durations.begin(), durations.end());
  summary.p50_us = percentile(durations, 50);
  summary.p90_us = percentile(durations, 90);
  summary.p99_us = percentile(durations, 99);
  summary.max_us = durations.empty() ? 0 : durations.back();
  for (const auto& [rank, totals] : op.per_rank) {
    double mean = totals.first / static_cast<double>(totals.second);
    if (summary.slowest_rank < 0 || mean > summary.slowest_mean_us) {
      summary.slowest_rank = rank;
      summary.slowest_mean_us = mean;
    }
  }
  std::map<int, int64_t> last_counts;
  for (const auto& [key, call] : op.calls) {
    if (call.ranks < 2) continue;
    ++summary.calls;
    ++last_counts[call.rank];
  }
  for (const auto& [rank, count] : last_counts) {
    if (count > summary.last_arrivals) {
      summary.last_arrival_rank = rank;
      summary.last_arrivals = count;
    }
  }
  return summary;
}

std::string format_summary(const std::vector<OpSummary>& summaries) {
  std::string out;
  char line[320];
  std::snprintf(line, sizeof line, "%-16s %8s %14s %10s %10s %10s %10s  %-22s %s\n", "op", "count",
                "total_bytes", "p50_us", "p90_us", "p99_us", "max_us", "slowest_rank(mean_us)",
                "last_to_arrive(calls)");
  out += line;
  for (const OpSummary& s : summaries) {
    char slowest[64];
    std::snprintf(slowest, sizeof slowest, "%d (%.1f)", s.slowest_rank, s.slowest_mean_us);
    char last[64] = "-";
    if (s.last_arrival_rank >= 0) {
      std::snprintf(last, sizeof last, "%d (%lld/%lld)", s.last_arrival_rank,
                    static_cast<long long>(s.last_arrivals), static_cast<long long>(s.calls));
    }
    std::snprintf(line, sizeof line, "%-16s %8lld %14lld %10.1f %10.1f %10.1f %10.1f  %-22s %s\n",
                  s.op.c_str(), static_cast<long long>(s.count),
                  static_cast<long long>(s.total_bytes), s.p50_us, s.p90_us, s.p99_us, s.max_us,
                  slowest, last);
    out += line;
  }
  return out;
}

}  // namespace weft_trace
