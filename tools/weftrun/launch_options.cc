#include "launch_options.h"

#include <charconv>
#include <climits>

#include "core_binding.h"

namespace weft::run {
namespace {

// torchrun spells flags both --nproc-per-node and --nproc_per_node; accept both.
std::string normalize_flag(std::string flag) {
  for (std::size_t i = 2; i < flag.size(); ++i) {
    if (flag[i] == '_') flag[i] = '-';
  }
  return flag;
}

int parse_int(const std::string& flag, const std::string& text, int min, int max) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max) {
    throw UsageError(flag + " expects an integer in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "], got '" + text + "'");
  }
  return value;
}

}  // namespace

const char* usage_text() {
  return "usage: weftrun [options] [--] program [args...]\n"
         "\n"
         "Starts nproc-per-node copies of program on this node, each with RANK, WORLD_SIZE,\n"
         "LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, NODE_RANK, MASTER_ADDR, MASTER_PORT,\n"
         "WEFT_JOB_TOKEN and WEFT_STORE_ADDR set, hosts the job's rendezvous store, prefixes\n"
         "their output with the rank and stops every rank when one fails.\n"
         "\n"
         "options:\n"
         "  -n, --nproc-per-node N  ranks to start on this node (default 1)\n"
         "  --nnodes N              nodes in the job (default 1)\n"
         "  --node-rank R           this node's rank in [0, nnodes) (default 0)\n"
         "  --master-addr HOST      node 0's address (default 127.0.0.1)\n"
         "  --master-port PORT      node 0's store port; programs get MASTER_PORT = PORT + 1\n"
         "                          (default 29500; a one-node job without it picks free ports)\n"
         "  --job-token TOKEN       the job's token (default: WEFT_JOB_TOKEN, else a random one\n"
         "                          made by node 0 and shared through the store)\n"
         "  --join-timeout SECONDS  how long nodes wait for each other at start (default 300)\n"
         "  --no-prefix             do not prefix output lines with \"[rank R] \"\n"
         "  --bind spread|none      spread (default): each local rank runs on its own equal\n"
         "                          slice of this node's CPUs (none when ranks outnumber them)\n"
         "  --standalone            accepted for torchrun compatibility (the default)\n"
         "  -h, --help              show this help\n"
         "\n"
         "exit status: 0 when every rank exits 0; the first failed rank's exit code (128 + signal\n"
         "for a rank killed by a signal); 128 + signal when weftrun itself is interrupted;\n"
         "127 when the program cannot be run; 2 for a usage error; 1 for other launcher errors.\n";
}

LaunchOptions parse_launch_options(const std::vector<std::string>& args) {
  LaunchOptions options;
  std::size_t i = 0;
  while (i < args.size()) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-' || arg == "-") break;  // the program

    // Split "--flag=value"; "-n4" is accepted too.
    std::string flag = arg;
    std::string inline_value;
    bool has_inline = false;
    if (arg.rfind("--", 0) == 0) {
      std::size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        flag = arg.substr(0, eq);
        inline_value = arg.substr(eq + 1);
        has_inline = true;
      }
      flag = normalize_flag(flag);
    } else if (arg.size() > 2) {
      flag = arg.substr(0, 2);
      inline_value = arg.substr(2);
      has_inline = true;
    }
    ++i;

    auto value = [&]() -> std::string {
      if (has_inline) return inline_value;
      if (i >= args.size()) throw UsageError(flag + " expects a value");
      return args[i++];
    };
    auto no_value = [&]() {
      if (has_inline) throw UsageError(flag + " takes no value");
    };

    if (flag == "-h" || flag == "--help") {
      no_value();
      options.show_help = true;
      return options;
    } else if (flag == "-n" || flag == "--nproc-per-node") {
      options.nproc_per_node = parse_int(flag, value(), 1, 4096);
    } else if (flag == "--nnodes") {
      options.nnodes = parse_int(flag, value(), 1, 65536);
    } else if (flag == "--node-rank") {
      options.node_rank = parse_int(flag, value(), 0, 65535);
    } else if (flag == "--master-addr") {
      options.master_addr = value();
      if (options.master_addr.empty()) throw UsageError("--master-addr expects a host");
      options.master_given = true;
    } else if (flag == "--master-port") {
      // MASTER_PORT = port + 1 must be a port too.
      options.master_port = parse_int(flag, value(), 1, 65534);
      options.master_given = true;
    } else if (flag == "--job-token") {
      options.job_token = value();
      if (options.job_token.empty()) throw UsageError("--job-token expects a non-empty token");
    } else if (flag == "--join-timeout") {
      options.join_timeout_seconds = parse_int(flag, value(), 1, 86400);
    } else if (flag == "--standalone") {
      // torchrun's spelling of a one-node job on free ports, which is weftrun's default.
      no_value();
    } else if (flag == "--bind") {
      options.bind = value();
      parse_bind_policy(options.bind);
    } else if (flag == "--no-prefix") {
      no_value();
      options.prefix_output = false;
    } else {
      throw UsageError("unknown option '" + arg + "'");
    }
  }

  options.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (options.command.empty()) throw UsageError("no program given");
  if (options.node_rank >= options.nnodes) {
    throw UsageError("--node-rank " + std::to_string(options.node_rank) +
                     " is not below --nnodes " + std::to_string(options.nnodes));
  }
  if (static_cast<long long>(options.nnodes) * options.nproc_per_node > INT_MAX / 2) {
    throw UsageError("--nnodes x --nproc-per-node is too large");
  }
  return options;
}

}  // namespace weft::run
