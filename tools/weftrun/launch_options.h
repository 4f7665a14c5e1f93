// LaunchOptions — weftrun's command line, parsed and checked.
//
// Contract: parse_launch_options() either returns complete, valid options or throws
// UsageError whose what() is one line fit to print after "weftrun: ". It never exits and
// never prints, so that tests and main() decide what to do. Values only; no thread-safety
// concerns.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace weft::run {

struct LaunchOptions {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // Whether --master-addr / --master-port were given: a one-node job then hosts its store at
  // that address instead of on free local ports.
  bool master_given = false;
  std::string job_token;  // from --job-token; empty: WEFT_JOB_TOKEN or a fresh one
  bool prefix_output = true;
  std::string bind = "spread";     // --bind: spread or none (core_binding.h)
  int join_timeout_seconds = 300;  // how long nodes wait for each other at start-up
  bool show_help = false;
  std::vector<std::string> command;  // program and its arguments
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// args excludes argv[0]. Throws UsageError.
LaunchOptions parse_launch_options(const std::vector<std::string>& args);

// The --help text.
std::string usage_text();

}  // namespace weft::run
