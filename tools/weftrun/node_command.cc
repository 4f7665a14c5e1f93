#include "node_command.h"

#include <cstring>
#include <sstream>

namespace weft::run {
namespace {

// Set by each node's weftrun for its own ranks, or meaningful on this host only.
bool set_per_node(const std::string& name) {
  return name == "WEFT_STORE_ADDR" || name == "WEFT_JOB_TOKEN" || name == "WEFT_FLIGHT_DIR";
}

}  // namespace

std::vector<std::string> node_weftrun_argv(const LaunchOptions& options, const NodeJob& job,
                                           int node_rank) {
  std::vector<std::string> argv = {
      job.weftrun_path,
      "--nnodes",
      std::to_string(options.nnodes),
      "--node-rank",
      std::to_string(node_rank),
      "--nproc-per-node",
      std::to_string(options.nproc_per_node),
      "--master-addr",
      job.master_addr,
      "--master-port",
      std::to_string(job.master_port),
      "--join-timeout",
      std::to_string(options.join_timeout_seconds),
      "--bind",
      options.bind,
      "--node-host",
      options.node_hosts[static_cast<std::size_t>(node_rank)],
      "--stop-on-stdin-close",
  };
  if (!options.time_limit_text.empty()) {
    argv.insert(argv.end(), {"--timeout", options.time_limit_text});
  }
  if (!options.output_dir.empty()) argv.insert(argv.end(), {"--output-dir", options.output_dir});
  if (options.timestamp) argv.push_back("--timestamp");
  if (!options.prefix_output) argv.push_back("--no-prefix");
  argv.push_back("--");
  argv.insert(argv.end(), options.command.begin(), options.command.end());
  return argv;
}

std::vector<std::string> node_environment(const char* const* inherited,
                                          const std::vector<std::string>& exports,
                                          const std::string& job_token) {
  std::vector<std::string> environment;
  for (const char* const* entry = inherited; entry != nullptr && *entry != nullptr; ++entry) {
    std::string text = *entry;
    std::string name = text.substr(0, text.find('='));
    if (name.rfind("WEFT_", 0) == 0 && !set_per_node(name)) environment.push_back(text);
  }
  for (const std::string& item : exports) {
    if (item.find('=') != std::string::npos) {
      environment.push_back(item);
      continue;
    }
    for (const char* const* entry = inherited; entry != nullptr && *entry != nullptr; ++entry) {
      if (std::strncmp(*entry, item.c_str(), item.size()) == 0 && (*entry)[item.size()] == '=') {
        environment.push_back(*entry);
        break;
      }
    }
  }
  environment.push_back("WEFT_JOB_TOKEN=" + job_token);
  return environment;
}

std::string shell_quote(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_-+=/.,:@%") == std::string::npos) {
    return word;
  }
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string remote_shell_line(const NodeJob& job, const std::vector<std::string>& weftrun_argv) {
  std::string line = "cd " + shell_quote(job.working_dir) + " && exec env";
  for (const std::string& entry : job.environment) line += " " + shell_quote(entry);
  for (const std::string& word : weftrun_argv) line += " " + shell_quote(word);
  return line;
}

std::vector<std::string> remote_shell_argv(const std::string& rsh, const std::string& host,
                                           const std::string& line) {
  std::vector<std::string> argv;
  std::istringstream words(rsh);
  for (std::string word; words >> word;) argv.push_back(word);
  argv.push_back(host);
  argv.push_back(line);
  return argv;
}

}  // namespace weft::run
