#include "launch_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <memory>
#include <sstream>

#include "common/cli_checks.h"
#include "core_binding.h"
#include "host_list.h"
#include "rank_placement.h"

namespace weft::run {
namespace {

using cli::within;

constexpr const char* kUsageLine = "usage: weftrun [options] [--] program [args...]";

constexpr const char* kDescription =
    "Starts nproc-per-node copies of program on this node, each with RANK, WORLD_SIZE,\n"
    "LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, NODE_RANK, MASTER_ADDR, MASTER_PORT,\n"
    "WEFT_JOB_TOKEN and WEFT_STORE_ADDR set, hosts the job's rendezvous store, prefixes\n"
    "their output with the rank and stops every rank when one fails. With --hosts or\n"
    "--hostfile, starts the job on every host listed, through --rsh.";

constexpr const char* kExitStatus =
    "exit status: 0 when every rank exits 0; the first failed rank's exit code (128 + signal\n"
    "for a rank killed by a signal); 128 + signal when weftrun itself is interrupted;\n"
    "124 when the job ran past --timeout; 127 when the program cannot be run; 2 for a usage\n"
    "error; 1 for other launcher errors.";

// The largest --timeout, a year: far beyond any job, and far from overflowing a clock.
constexpr long long kMaxTimeLimitSeconds = 8760LL * 3600;

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
      if (name == "--np") name = "-np";  // how mpirun users write it (see with_np_rewritten)
      shown += (shown.empty() ? "" : ", ") + name;
    }
    return shown;
  }
};

CLI::Validator non_empty(const std::string& what) {
  return CLI::Validator(
      [what](const std::string& value) { return value.empty() ? "expects " + what : ""; }, "");
}

// -x's NAME or NAME=VALUE, NAME as a shell would accept it.
CLI::Validator variable_assignment() {
  return CLI::Validator(
      [](const std::string& value) {
        std::string name = value.substr(0, value.find('='));
        bool valid = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                     name.find_first_not_of(
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                         "0123456789_") == std::string::npos;
        return valid ? "" : "expects NAME or NAME=VALUE, got '" + value + "'";
      },
      "");
}

CLI::Validator duration() {
  return CLI::Validator(
      [](const std::string& value) {
        return parse_duration(value) ? ""
                                     : "expects a duration such as 90, 90s, 5m or 2h (at most "
                                       "8760h), got '" +
                                           value + "'";
      },
      "");
}

// The flags that choose the hosts; turned into LaunchOptions::node_hosts after parsing.
struct HostFlags {
  std::string hosts;
  std::string hostfile;
  bool oversubscribe = false;
};

// The whole command line description; every value lands in `options` or `hosts`.
std::unique_ptr<CLI::App> make_parser(LaunchOptions& options, HostFlags& hosts) {
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
  add("-n,--nproc-per-node", options.nproc_per_node, "N",
      "ranks to start on this node, or with --hosts on each host\n"
      "(default 1)")
      ->check(within(1, 4096));
  // mpirun's -np: one dash, two letters, which CLI11 cannot name; parse_launch_options()
  // hands it over as --np.
  add("--np", options.total_ranks, "N",
      "ranks in the whole job, as mpirun's -np: N / nnodes on\n"
      "each node (N must divide evenly); with --hosts, by slot")
      ->check(within(1, INT_MAX / 2));
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
      "the job's token (default: WEFT_JOB_TOKEN, else, for a job on one\n"
      "node, a random one; a job on several nodes must be given one)")
      ->check(non_empty("a non-empty token"));
  add("--join-timeout", options.join_timeout_seconds, "SECONDS",
      "how long nodes wait for each other at start (default 300)")
      ->check(within(1, 86400));
  add("--timeout", options.time_limit_text, "DURATION",
      "stop the job after this long, as on a failure, and exit\n"
      "124 (90, 90s, 5m, 2h; default: no limit)")
      ->check(duration());
  add("--output-dir", options.output_dir, "DIR",
      "also write rank R's stdout and stderr to\n"
      "DIR/rank<R>/stdout and DIR/rank<R>/stderr")
      ->check(non_empty("a directory"));
  app->add_flag_callback(
      with_torchrun_spellings("--timestamp"), [&options] { options.timestamp = true; },
      "put the wall-clock time in front of every output line");
  app->add_flag_callback(
      with_torchrun_spellings("--no-prefix"), [&options] { options.prefix_output = false; },
      "do not prefix output lines with \"[rank R] \"");
  add("--bind", options.bind, "spread|none",
      "spread (default): each local rank runs on its own equal\n"
      "slice of this node's CPUs (none when ranks outnumber them)");
  add("-H,--host,--hosts", hosts.hosts, "HOST[:SLOTS],...",
      "start the job on these hosts, node 0 on the first, through\n"
      "--rsh (a host that is this one: directly). Ranks fill each\n"
      "host's slots in order (default 1 slot)")
      ->check(non_empty("hosts"));
  add("--hostfile,--machinefile", hosts.hostfile, "FILE",
      "the hosts from a file, mpirun's format: 'host slots=N' lines")
      ->check(non_empty("a file"));
  app->add_flag("--oversubscribe", hosts.oversubscribe,
                "with --hosts: allow more ranks on a host than its slots");
  add("--rsh", options.rsh, "CMD",
      "with --hosts: the remote shell; the host and the command are\n"
      "appended to CMD's words (default: ssh -o BatchMode=yes)")
      ->check(non_empty("a command"));
  add("-x", options.exports, "NAME[=VALUE]",
      "give the ranks this variable (with --hosts: on every host;\n"
      "WEFT_* variables always go)")
      ->expected(1)  // one variable per -x, as mpirun's; the program follows
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(variable_assignment());
  app->add_flag("--stop-on-stdin-close", options.stop_on_stdin_close,
                "stop the ranks when stdin ends (how --hosts stops remote nodes)");
  add("--node-host", options.node_host, "HOST", "this node's host name in messages");
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

// mpirun's -np is a one-dash flag of two letters, which CLI11 would read as -n with the value
// "p". Among weftrun's own flags (not in the program's arguments) it becomes --np: "-np 4",
// "-np=4" and "-np4" all work. Which later words are flag values comes from the parser itself.
std::vector<std::string> with_np_rewritten(const CLI::App& app, std::vector<std::string> args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string& arg = args[i];
    if (arg == "--" || arg.size() < 2 || arg[0] != '-') break;  // the program starts here
    if (arg == "-np" || arg.rfind("-np=", 0) == 0) {
      arg.insert(0, "-");
    } else if (arg.size() > 3 && arg.rfind("-np", 0) == 0 &&
               arg.find_first_not_of("0123456789", 3) == std::string::npos) {
      arg = "--np=" + arg.substr(3);
    }
    if (arg.find('=') != std::string::npos) continue;         // --flag=value
    if (arg.rfind("--", 0) != 0 && arg.size() > 2) continue;  // -n4
    const CLI::Option* option = app.get_option_no_throw(arg);
    if (option != nullptr && option->get_items_expected_min() > 0) ++i;  // skip its value
  }
  return args;
}

// -np N is the whole job's ranks; -n / --nproc-per-node this node's. Either may be given, or
// both when they agree.
void apply_total_ranks(LaunchOptions& options, bool per_node_given) {
  if (options.total_ranks == 0) return;
  const std::string np = "-np " + std::to_string(options.total_ranks);
  const std::string nnodes = "--nnodes " + std::to_string(options.nnodes);
  if (options.total_ranks % options.nnodes != 0) {
    throw UsageError(np + " does not divide evenly over " + nnodes +
                     " (-np is the job's total number of ranks)");
  }
  const int per_node = options.total_ranks / options.nnodes;
  if (per_node_given && per_node != options.nproc_per_node) {
    std::string per_node_text =
        options.nnodes > 1
            ? " over " + nnodes + " is " + std::to_string(per_node) + " ranks per node, which"
            : "";
    throw UsageError(np + per_node_text + " conflicts with --nproc-per-node " +
                     std::to_string(options.nproc_per_node));
  }
  if (per_node > 4096) {
    throw UsageError(np + " is " + std::to_string(per_node) + " ranks per node, more than 4096");
  }
  options.nproc_per_node = per_node;
}

// --hosts / --hostfile: the hosts decide the nodes, and -np / -n how many ranks each runs.
void place_on_hosts(LaunchOptions& options, const HostFlags& flags, const CLI::App& app) {
  if (!flags.hosts.empty() && !flags.hostfile.empty()) {
    throw UsageError("give --hosts or --hostfile, not both");
  }
  for (const char* node_flag : {"--nnodes", "--node-rank"}) {
    if (app.count(node_flag) > 0) {
      throw UsageError(std::string(node_flag) +
                       " cannot be given with --hosts or --hostfile, which decide the nodes");
    }
  }
  try {
    std::vector<HostSlots> hosts =
        flags.hosts.empty() ? read_hostfile(flags.hostfile) : parse_host_list(flags.hosts);
    PlacementRequest request;
    request.total_ranks = options.total_ranks;
    request.per_host = app.count("--nproc-per-node") > 0 ? options.nproc_per_node : 0;
    request.oversubscribe = flags.oversubscribe;
    Placement placement = place_ranks(hosts, request);
    options.node_hosts = placement.hosts;
    options.nnodes = static_cast<int>(placement.hosts.size());
    options.nproc_per_node = placement.ranks_per_host;
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
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

std::optional<std::chrono::seconds> parse_duration(const std::string& text) {
  std::string digits = text;
  long long unit = 1;
  if (!digits.empty() && (digits.back() == 's' || digits.back() == 'm' || digits.back() == 'h')) {
    unit = digits.back() == 'h' ? 3600 : digits.back() == 'm' ? 60 : 1;
    digits.pop_back();
  }
  if (digits.empty() || digits.size() > 9 || digits[0] == '-' ||
      !cli::not_decimal(digits).empty()) {
    return std::nullopt;
  }
  long long seconds = std::atoll(digits.c_str()) * unit;
  if (seconds < 1 || seconds > kMaxTimeLimitSeconds) return std::nullopt;
  return std::chrono::seconds(seconds);
}

std::string usage_text() {
  LaunchOptions unused;
  HostFlags unused_hosts;
  return make_parser(unused, unused_hosts)->help();
}

LaunchOptions parse_launch_options(const std::vector<std::string>& args) {
  LaunchOptions options;
  HostFlags hosts;
  std::unique_ptr<CLI::App> app = make_parser(options, hosts);
  try {
    // CLI11 takes the arguments last first.
    std::vector<std::string> words = with_np_rewritten(*app, args);
    app->parse(std::vector<std::string>(words.rbegin(), words.rend()));
  } catch (const CLI::CallForHelp&) {
    options.show_help = true;
    return options;
  } catch (const CLI::ParseError& error) {
    throw UsageError(error.what());
  }
  options.master_addr_given = app->count("--master-addr") > 0;
  options.master_port_given = app->count("--master-port") > 0;
  options.master_given = options.master_addr_given || options.master_port_given;
  parse_bind_policy(options.bind);
  if (!options.time_limit_text.empty())
    options.time_limit = parse_duration(options.time_limit_text);
  options.command = take_command(app->remaining());
  if (options.command.empty()) throw UsageError("no program given");
  if (!hosts.hosts.empty() || !hosts.hostfile.empty()) {
    place_on_hosts(options, hosts, *app);
  } else {
    apply_total_ranks(options, app->count("--nproc-per-node") > 0);
  }
  check_layout(options);
  return options;
}

}  // namespace weft::run
