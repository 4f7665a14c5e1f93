#include "launch_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <memory>
#include <sstream>

#include "common/cli_checks.h"
#include "core_binding.h"

namespace weft::run {
namespace {

using cli::within;

constexpr const char* kUsageLine = "usage: weftrun [options] [--] program [args...]";

constexpr const char* kDescription =
    "Starts nproc-per-node copies of program on this node, each with RANK, WORLD_SIZE,\n"
    "LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, NODE_RANK, MASTER_ADDR, MASTER_PORT,\n"
    "WEFT_JOB_TOKEN and WEFT_STORE_ADDR set, hosts the job's rendezvous store, prefixes\n"
    "their output with the rank and stops every rank when one fails.";

constexpr const char* kExitStatus =
    "exit status: 0 when every rank exits 0; the first failed rank's exit code (128 + signal\n"
    "for a rank killed by a signal); 128 + signal when weftrun itself is interrupted;\n"
    "127 when the program cannot be run; 2 for a usage error; 1 for other launcher errors.";

// torchrun spells its flags both --nproc-per-node and --nproc_per_node. CLI11 matches names
// exactly (its ignore_underscore() drops underscores instead of reading them as dashes), so
// each dashed long name gets its underscore twin.
std::string with_torchrun_spellings(const std::string& names) {
  std::string all = names;
  std::istringstream list(names);
  for (std::string name; std::getline(list, name, ',');) {
    if (name.rfind("--", 0) != 0 || name.find('-', 2) == std::string::npos) continue;
    std::replace(name.begin() + 2, name.end(), '-', '_');
    all += "," + name;
  }
  return all;
}

// CLI11's help, in weftrun's order: the usage line first (tests and users look for it there),
// and each flag under its dashed names only; the underscore twins are aliases, not more flags.
class LaunchHelpFormatter : public CLI::Formatter {
 public:
  std::string make_description(const CLI::App*) const override { return ""; }

  std::string make_usage(const CLI::App* app, std::string) const override {
    return std::string(kUsageLine) + "\n\n" + app->get_description() + "\n";
  }

  std::string make_option_name(const CLI::Option* option, bool positional) const override {
    std::string shown;
    std::istringstream list(CLI::Formatter::make_option_name(option, positional));
    for (std::string name; std::getline(list, name, ',');) {
      if (name.find('_') != std::string::npos) continue;
      shown += (shown.empty() ? "" : ", ") + name;
    }
    return shown;
  }
};

CLI::Validator non_empty(const std::string& what) {
  return CLI::Validator(
      [what](const std::string& value) { return value.empty() ? "expects " + what : ""; }, "");
}

// The whole command line description; every value lands in `options`.
std::unique_ptr<CLI::App> make_parser(LaunchOptions& options) {
  auto app = std::make_unique<CLI::App>(kDescription, "weftrun");
  auto formatter = std::make_shared<LaunchHelpFormatter>();
  formatter->column_width(26);
  app->formatter(formatter);
  app->footer(kExitStatus);
  // Everything from the program on is the program's: `weftrun -n 4 ./prog -n 3` passes "-n 3"
  // to ./prog. Unknown flags before the program land in remaining() too; the caller refuses them.
  app->prefix_command();
  // A flag given twice takes its last value, as torchrun's argparse does.
  app->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)->group("options");

  auto add = [&](const std::string& names, auto& value, const std::string& text,
                 const std::string& help) {
    return app->add_option(with_torchrun_spellings(names), value, help)->type_name(text);
  };
  add("-n,--nproc-per-node", options.nproc_per_node, "N", "ranks to start on this node (default 1)")
      ->check(within(1, 4096));
  add("--nnodes", options.nnodes, "N", "nodes in the job (default 1)")->check(within(1, 65536));
  add("--node-rank", options.node_rank, "R", "this node's rank in [0, nnodes) (default 0)")
      ->check(within(0, 65535));
  add("--master-addr", options.master_addr, "HOST", "node 0's address (default 127.0.0.1)")
      ->check(non_empty("a host"));
  // MASTER_PORT = port + 1 must be a port too.
  add("--master-port", options.master_port, "PORT",
      "node 0's store port; programs get MASTER_PORT = PORT + 1\n"
      "(default 29500; a one-node job without it picks free ports)")
      ->check(within(1, 65534));
  add("--job-token", options.job_token, "TOKEN",
      "the job's token (default: WEFT_JOB_TOKEN, else a random one\n"
      "made by node 0 and shared through the store)")
      ->check(non_empty("a non-empty token"));
  add("--join-timeout", options.join_timeout_seconds, "SECONDS",
      "how long nodes wait for each other at start (default 300)")
      ->check(within(1, 86400));
  app->add_flag_callback(
      with_torchrun_spellings("--no-prefix"), [&options] { options.prefix_output = false; },
      "do not prefix output lines with \"[rank R] \"");
  add("--bind", options.bind, "spread|none",
      "spread (default): each local rank runs on its own equal\n"
      "slice of this node's CPUs (none when ranks outnumber them)");
  // torchrun's spelling of a one-node job on free ports, which is weftrun's default.
  app->add_flag("--standalone")->description("accepted for torchrun compatibility (the default)");
  app->set_help_flag("-h,--help", "show this help");
  return app;
}

// With prefix_command() the leftovers are: any flags weftrun does not know, in order, then
// "--" if given, then the program and its arguments.
std::vector<std::string> take_command(const std::vector<std::string>& remaining) {
  auto first = remaining.begin();
  if (first != remaining.end() && *first == "--") return {first + 1, remaining.end()};
  if (first != remaining.end() && first->size() > 1 && (*first)[0] == '-') {
    throw UsageError("unknown option '" + *first + "'");
  }
  return {first, remaining.end()};
}

void check_layout(const LaunchOptions& options) {
  if (options.node_rank >= options.nnodes) {
    throw UsageError("--node-rank " + std::to_string(options.node_rank) +
                     " is not below --nnodes " + std::to_string(options.nnodes));
  }
  if (static_cast<long long>(options.nnodes) * options.nproc_per_node > INT_MAX / 2) {
    throw UsageError("--nnodes x --nproc-per-node is too large");
  }
}

}  // namespace

std::string usage_text() {
  LaunchOptions unused;
  return make_parser(unused)->help();
}

LaunchOptions parse_launch_options(const std::vector<std::string>& args) {
  LaunchOptions options;
  std::unique_ptr<CLI::App> app = make_parser(options);
  try {
    // CLI11 takes the arguments last first.
    app->parse(std::vector<std::string>(args.rbegin(), args.rend()));
  } catch (const CLI::CallForHelp&) {
    options.show_help = true;
    return options;
  } catch (const CLI::ParseError& error) {
    throw UsageError(error.what());
  }
  options.master_given = app->count("--master-addr") > 0 || app->count("--master-port") > 0;
  parse_bind_policy(options.bind);
  options.command = take_command(app->remaining());
  if (options.command.empty()) throw UsageError("no program given");
  check_layout(options);
  return options;
}

}  // namespace weft::run
