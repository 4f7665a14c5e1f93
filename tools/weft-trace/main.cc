// weft-trace — reads the timelines WEFT_TRACE writes (docs/observability.md "Timeline").
//   weft-trace summary DIR   per op: count, bytes, time percentiles, the rank that holds it up
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>

#include "op_summary.h"
#include "trace_events.h"

int main(int argc, char** argv) {
  CLI::App app{"Reads the timelines weft writes with WEFT_TRACE=DIR.", "weft-trace"};
  app.require_subcommand(1);
  std::string path;
  CLI::App* summary = app.add_subcommand(
      "summary",
      "Per op: count, total bytes, duration percentiles (p50 p90 p99 max, microseconds over "
      "every rank's calls), the rank with the highest mean duration and the rank that most "
      "often started a collective last (the one the others wait for).");
  summary->add_option("DIR", path, "WEFT_TRACE's directory (trace.json or rank<R>.json), or a file")
      ->required();
  CLI11_PARSE(app, argc, argv);
  try {
    weft_trace::SummaryBuilder builder;
    weft_trace::for_each_trace_op(path, [&](const weft_trace::TraceOp& op) { builder.add(op); });
    std::fputs(weft_trace::format_summary(builder.summaries()).c_str(), stdout);
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "weft-trace: %s\n", error.what());
    return 1;
  }
}
