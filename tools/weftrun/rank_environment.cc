#include "rank_environment.h"

#include <map>

namespace weft::run {

std::string join_host_port(const std::string& host, int port) {
  bool v6 = host.find(':') != std::string::npos && host.front() != '[';
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::vector<std::string> rank_environment(const JobLayout& layout, int local_rank,
                                          const char* const* inherited) {
  std::map<std::string, std::string> set = {
      {"RANK", std::to_string(layout.global_rank(local_rank))},
      {"WORLD_SIZE", std::to_string(layout.world_size())},
      {"LOCAL_RANK", std::to_string(local_rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(layout.nproc_per_node)},
      {"GROUP_RANK", std::to_string(layout.node_rank)},
      {"NODE_RANK", std::to_string(layout.node_rank)},
      {"MASTER_ADDR", layout.master_addr},
      {"MASTER_PORT", std::to_string(layout.master_port)},
      {"WEFT_JOB_TOKEN", layout.job_token},
      {"WEFT_STORE_ADDR", layout.store_addr},
  };
  std::vector<std::string> environment;
  for (const char* const* entry = inherited; entry != nullptr && *entry != nullptr; ++entry) {
    std::string text = *entry;
    std::string name = text.substr(0, text.find('='));
    if (set.count(name) == 0) environment.push_back(std::move(text));
  }
  for (const auto& [name, value] : set) environment.push_back(name + "=" + value);
  return environment;
}

}  // namespace weft::run
