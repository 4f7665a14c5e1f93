// LaunchOptions — weftrun's command line, parsed and checked.
//
// Contract: parse_launch_options() either returns complete, valid options or throws
// UsageError whose what() is one line fit to print after "weftrun: ". It never exits and
// never prints, so that tests and main() decide what to do. Values only; no thread-safety
// concerns.
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace weft::run {

struct LaunchOptions {
  // Ranks on this node: -n / --nproc-per-node, or -np (the job's total) / --nnodes.
  int nproc_per_node = 1;
  int total_ranks = 0;  // -np, the whole job's ranks; 0 when not given
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
  // --timeout: the job's time limit on each node, counted from when the ranks start; and the
  // flag's value as written, for the line printed when it expires.
  std::optional<std::chrono::seconds> time_limit;
  std::string time_limit_text;
  std::string output_dir;  // --output-dir: also write rank R's output to DIR/rank<R>/std{out,err}
  bool timestamp = false;  // --timestamp: a wall-clock time in front of every forwarded line
  bool show_help = false;

  // One command, many hosts (host_launcher.h). node_hosts is the placement of --hosts or
  // --hostfile (node 0 first); empty for a job started one node at a time.
  std::vector<std::string> node_hosts;
  bool master_addr_given = false;
  bool master_port_given = false;
  std::string rsh = "ssh -o BatchMode=yes";  // --rsh: the remote shell, split on spaces
  std::vector<std::string> exports;          // -x NAME or NAME=VALUE, for every node's ranks
  // Given by the launcher to each node's weftrun: stop the ranks when stdin reaches its end
  // (the launcher or its remote shell is gone), and the host name to put in messages.
  bool stop_on_stdin_close = false;
  std::string node_host;

  std::vector<std::string> command;  // program and its arguments
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// args excludes argv[0]. Throws UsageError.
LaunchOptions parse_launch_options(const std::vector<std::string>& args);

// "90", "90s", "5m", "2h": a whole, positive number of seconds (no suffix or s), minutes or
// hours, at most 8760h; nullopt for anything else.
std::optional<std::chrono::seconds> parse_duration(const std::string& text);

// The --help text.
std::string usage_text();

}  // namespace weft::run
