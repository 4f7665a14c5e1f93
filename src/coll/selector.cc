#include "coll/selector.h"

#include <algorithm>

#include "util/settings.h"
#include "weft/error.h"

namespace weft::coll {

namespace {

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = 1024 * kKiB;

bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

bool has(Collective collective, const std::string& name) {
  const auto& names = algorithms_of(collective);
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string valid_names(Collective collective) {
  std::string text;
  for (const auto& name : algorithms_of(collective)) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// What WEFT_ALGO (its value, or the environment's when null) says for this collective, or "".
std::string from_environment(Collective collective, const std::string* setting) {
  std::string value = setting ? *setting : util::setting_string("WEFT_ALGO");
  if (value.empty()) return "";
  if (value.find('=') == std::string::npos) return has(collective, value) ? value : "";
  std::string wanted = std::string(name_of(collective)) + "=";
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t comma = value.find(',', start);
    std::string item =
        value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.rfind(wanted, 0) == 0) {
      std::string name = item.substr(wanted.size());
      if (!has(collective, name)) {
        throw Error(ErrorCode::kInvalidArgument,
                    "WEFT_ALGO='" + value + "': " + name_of(collective) + " has no algorithm '" +
                        name + "' (valid: " + valid_names(collective) + ")");
      }
      return name;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return "";
}

bool has_shared_memory_algorithm(Collective collective) {
  return collective != Collective::kGather && collective != Collective::kScatter &&
         collective != Collective::kScan;
}

bool has_hierarchical_algorithm(Collective collective) {
  return collective == Collective::kAllReduce || collective == Collective::kBroadcast ||
         collective == Collective::kReduce || collective == Collective::kAllGather;
}

std::string by_size(const SelectionInput& in) {
  // Never by size alone: ranks of an uneven call see different sizes, and all must agree.
  if (in.single_host && has_shared_memory_algorithm(in.collective)) return "shm";
  if (in.spans_hosts && has_hierarchical_algorithm(in.collective)) return "hierarchical";
  switch (in.collective) {
    // Thresholds from bench/collectives_compare.sh runs on 2 and 4 ranks (docs/PERFORMANCE.md).
    case Collective::kAllReduce:
      if (in.group_size <= 4 && in.bytes <= 256 * kKiB) return "recursive_doubling";
      if (in.bytes <= 16 * kKiB) return "recursive_doubling";
      if (is_power_of_two(in.group_size) && in.bytes <= 1 * kMiB) return "rabenseifner";
      return "ring";
    case Collective::kBroadcast:
      return in.group_size <= 4 || in.bytes < 512 * kKiB ? "binomial" : "scatter_allgather";
    case Collective::kAllGather:
      // in.bytes is the whole gathered output.
      return in.equal_blocks && in.bytes <= 1 * kMiB ? "bruck" : "ring";
    default:
      return algorithms_of(in.collective).front();
  }
}

}  // namespace

const char* name_of(Collective collective) {
  switch (collective) {
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kAllReduce:
      return "all_reduce";
    case Collective::kReduce:
      return "reduce";
    case Collective::kAllGather:
      return "all_gather";
    case Collective::kGather:
      return "gather";
    case Collective::kScatter:
      return "scatter";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kAllToAll:
      return "all_to_all";
    case Collective::kBarrier:
      return "barrier";
    case Collective::kScan:
      return "scan";
  }
  return "unknown";
}

const std::vector<std::string>& algorithms_of(Collective collective) {
  static const std::vector<std::string> kBroadcast{"binomial", "scatter_allgather", "shm",
                                                   "hierarchical"};
  static const std::vector<std::string> kAllReduce{
      "ring", "recursive_doubling", "rabenseifner", "naive", "shm", "hierarchical"};
  static const std::vector<std::string> kReduce{"binomial", "shm", "hierarchical"};
  static const std::vector<std::string> kTree{"binomial"};
  static const std::vector<std::string> kAllGather{"ring", "bruck", "shm", "hierarchical"};
  static const std::vector<std::string> kRing{"ring", "shm"};
  static const std::vector<std::string> kPairwise{"pairwise", "shm"};
  static const std::vector<std::string> kBarrier{"dissemination", "shm"};
  static const std::vector<std::string> kScan{"recursive_doubling"};
  switch (collective) {
    case Collective::kBroadcast:
      return kBroadcast;
    case Collective::kAllReduce:
      return kAllReduce;
    case Collective::kReduce:
      return kReduce;
    case Collective::kGather:
    case Collective::kScatter:
      return kTree;
    case Collective::kAllGather:
      return kAllGather;
    case Collective::kReduceScatter:
      return kRing;
    case Collective::kAllToAll:
      return kPairwise;
    case Collective::kBarrier:
      return kBarrier;
    case Collective::kScan:
      return kScan;
  }
  return kRing;
}

std::string choose_algorithm(const SelectionInput& input) {
  // Nothing asked for (the common case): no setting to parse, a visible part of a small call.
  if (input.forced.empty() && input.algorithm_setting && input.algorithm_setting->empty()) {
    return by_size(input);
  }
  std::string name = input.forced.empty()
                         ? from_environment(input.collective, input.algorithm_setting)
                         : input.forced;
  if (!name.empty() && !has(input.collective, name)) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(name_of(input.collective)) + " has no algorithm '" + name +
                    "' (valid: " + valid_names(input.collective) + ")");
  }
  if (name == "bruck" && !input.equal_blocks) {
    throw Error(ErrorCode::kInvalidArgument,
                "all_gather algorithm 'bruck' needs equal sizes on every rank; use 'ring'");
  }
  return name.empty() ? by_size(input) : name;
}

}  // namespace weft::coll

namespace weft::coll {

std::string choose_without_shared_memory(const SelectionInput& input) {
  SelectionInput spread = input;
  spread.single_host = false;
  spread.spans_hosts = false;
  return by_size(spread);
}

}  // namespace weft::coll
