#include "coll/selector.h"

#include <algorithm>
#include <array>
#include <optional>
#include <span>

#include "coll/cost_model.h"
#include "util/settings.h"
#include "weft/error.h"

namespace weft::coll {

using core::OpKind;

namespace {

// The collective's algorithm of this name, if it has one.
std::optional<Algorithm> find(OpKind collective, std::string_view name) {
  for (Algorithm algorithm : algorithms_of(collective)) {
    if (name == name_of(algorithm)) return algorithm;
  }
  return std::nullopt;
}

std::string valid_names(OpKind collective) {
  std::string text;
  for (Algorithm algorithm : algorithms_of(collective)) {
    text += (text.empty() ? "" : ", ") + std::string(name_of(algorithm));
  }
  return text;
}

[[noreturn]] void no_such_algorithm(OpKind collective, std::string_view name,
                                    const std::string& context) {
  throw Error(ErrorCode::kInvalidArgument, context + name_of(collective) + " has no algorithm '" +
                                               std::string(name) +
                                               "' (valid: " + valid_names(collective) + ")");
}

// What WEFT_ALGO (its value, or the environment's when null) says for this collective.
std::optional<Algorithm> from_environment(OpKind collective, const std::string* setting) {
  std::string value = setting ? *setting : util::setting_string("WEFT_ALGO");
  if (value.empty()) return std::nullopt;
  if (value.find('=') == std::string::npos) return find(collective, value);
  std::string wanted = std::string(name_of(collective)) + "=";
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t comma = value.find(',', start);
    std::string item =
        value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.rfind(wanted, 0) == 0) {
      std::string name = item.substr(wanted.size());
      std::optional<Algorithm> algorithm = find(collective, name);
      if (!algorithm) no_such_algorithm(collective, name, "WEFT_ALGO='" + value + "': ");
      return algorithm;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return std::nullopt;
}

bool has_hierarchical_algorithm(OpKind collective) {
  const std::vector<Algorithm>& algorithms = algorithms_of(collective);
  return std::find(algorithms.begin(), algorithms.end(), Algorithm::kHierarchical) !=
         algorithms.end();
}

void require_selectable(OpKind kind) {
  if (!selects_for(kind)) {
    throw Error(ErrorCode::kInternal,
                std::string("the selector has no algorithms for ") + name_of(kind));
  }
}

HostSpread spread_of(const SelectionInput& in) {
  if (in.hosts < 2 || in.largest_host < 2 || in.hosts > in.group_size) {
    throw Error(ErrorCode::kInternal,
                std::string("the selector was asked for ") + name_of(in.collective) +
                    " on a group over hosts without its layout: " + std::to_string(in.hosts) +
                    " hosts, the largest with " + std::to_string(in.largest_host) + " of " +
                    std::to_string(in.group_size) + " ranks");
  }
  return HostSpread{in.group_size, in.hosts, in.largest_host};
}

Algorithm by_size(const SelectionInput& in) {
  // Never by size alone: ranks of an uneven call see different sizes, and all must agree.
  if (runs_shm_unforced(in.collective, in.single_host)) return Algorithm::kShm;
  const bool across_hosts = in.spans_hosts && has_hierarchical_algorithm(in.collective);
  // Split sizes: each rank sees its own bytes, so they cannot decide.
  if (across_hosts && in.collective == OpKind::kAllToAll && !in.equal_blocks) {
    return Algorithm::kHierarchical;
  }
  const NetworkModel network = in.network == nullptr || !in.network->any()
                                   ? selector_network_model()
                                   : selector_network_model(*in.network);
  if (across_hosts) {
    return choose_across_hosts(in.collective, spread_of(in), in.bytes, in.equal_blocks, network);
  }
  return choose_over_network(in.collective, in.group_size, in.bytes, in.equal_blocks, network);
}

// The candidates of choose_over_network, latency-optimal first so that it wins a tie. Off a
// power of two recursive doubling and Rabenseifner fold the extra ranks in and out (two more
// whole-buffer steps), which the model prices: Rabenseifner wins there where its halving saves
// more than the fold costs (many ranks, mid sizes; docs/scaling.md).
constexpr std::array kAllReduceCandidates{Algorithm::kRecursiveDoubling, Algorithm::kRabenseifner,
                                          Algorithm::kRing};
// Recursive halving takes log2 q steps to the ring's p - 1 but does not pipeline; off a power of
// two its fold moves the whole input once more.
constexpr std::array kReduceScatterCandidates{Algorithm::kRecursiveHalving, Algorithm::kRing};

// scatter_allgather's modeled gain over binomial is small below 5 ranks, and there its p - 1
// ring steps each wait for a rank that may not be running, which the model does not price
// (docs/perf-history.md, section 2; MPICH keeps the binomial tree below 8 processes for the
// same reason).
constexpr int kScatterAllgatherMinRanks = 5;

std::span<const Algorithm> allowed_broadcast(int group_size) {
  using enum Algorithm;
  static constexpr std::array kSmall{kBinomial};
  static constexpr std::array kLarge{kBinomial, kScatterAllgather};
  return group_size >= kScatterAllgatherMinRanks ? std::span<const Algorithm>(kLarge) : kSmall;
}

std::span<const Algorithm> allowed_all_gather(bool equal_blocks) {
  using enum Algorithm;
  static constexpr std::array kEqual{kBruck, kRing};
  static constexpr std::array kUneven{kRing};
  return equal_blocks ? std::span<const Algorithm>(kEqual) : kUneven;
}

}  // namespace

const std::vector<Algorithm>& algorithms_of(OpKind collective) {
  using enum Algorithm;
  static const std::vector<Algorithm> kBroadcast{kBinomial, kScatterAllgather, kShm, kHierarchical};
  static const std::vector<Algorithm> kAllReduce{kRing, kRecursiveDoubling, kRabenseifner, kNaive,
                                                 kShm,  kHierarchical};
  static const std::vector<Algorithm> kReduce{kBinomial, kShm, kHierarchical};
  static const std::vector<Algorithm> kTree{kBinomial, kHierarchical};
  static const std::vector<Algorithm> kAllGather{kRing, kBruck, kShm, kHierarchical};
  static const std::vector<Algorithm> kReduceScatter{kRing, kRecursiveHalving, kShm, kHierarchical};
  static const std::vector<Algorithm> kAllToAll{kPairwise, kShm, kHierarchical};
  static const std::vector<Algorithm> kBarrier{kDissemination, kShm, kHierarchical};
  static const std::vector<Algorithm> kScan{kRecursiveDoubling};
  static const std::vector<Algorithm> kNone;
  switch (collective) {
    case OpKind::kBroadcast:
      return kBroadcast;
    case OpKind::kAllReduce:
      return kAllReduce;
    case OpKind::kReduce:
      return kReduce;
    case OpKind::kGather:
    case OpKind::kScatter:
      return kTree;
    case OpKind::kAllGather:
      return kAllGather;
    case OpKind::kReduceScatter:
      return kReduceScatter;
    case OpKind::kAllToAll:
      return kAllToAll;
    case OpKind::kBarrier:
      return kBarrier;
    case OpKind::kScan:
      return kScan;
    case OpKind::kPointToPoint:
    case OpKind::kExscan:
      return kNone;
  }
  return kNone;
}

bool selects_for(OpKind kind) { return !algorithms_of(kind).empty(); }

Algorithm choose_algorithm(const SelectionInput& input) {
  require_selectable(input.collective);
  // Nothing asked for (the common case): no setting to parse, a visible part of a small call.
  if (input.forced.empty() && input.algorithm_setting && input.algorithm_setting->empty()) {
    return by_size(input);
  }
  std::optional<Algorithm> chosen;
  if (input.forced.empty()) {
    chosen = from_environment(input.collective, input.algorithm_setting);
  } else {
    chosen = find(input.collective, input.forced);
    if (!chosen) no_such_algorithm(input.collective, input.forced, "");
  }
  if (chosen == Algorithm::kBruck && !input.equal_blocks) {
    throw Error(ErrorCode::kInvalidArgument,
                "all_gather algorithm 'bruck' needs equal sizes on every rank; use 'ring'");
  }
  return chosen ? *chosen : by_size(input);
}

const NetworkModel& selector_network_model() {
  // Calibrated on the 4-rank TCP runs behind the former thresholds (docs/scaling.md): a
  // message step costs tens of microseconds there, with 4 ranks sharing 2 cores.
  // A job over a real network gives that network's numbers (WEFT_NET_*, the overload below).
  // NOTE(selector): they could be measured at start-up instead (weft-model --measure does on
  // loopback), at the price of a ping-pong per job.
  // Shared memory: within what 2 to 4 ranks of this machine measured (docs/scaling.md, "Ranks
  // that share a host").
  static constexpr NetworkModel kLoopbackOnTwoCores{.alpha_s = 20e-6,
                                                    .beta_s_per_byte = 1 / 1.25e9,
                                                    .gamma_s_per_byte = 1 / 16e9,
                                                    .shm_alpha_s = 3e-6,
                                                    .shm_beta_s_per_byte = 1 / 4e9};
  return kLoopbackOnTwoCores;
}

NetworkModel selector_network_model(const util::NetworkSettings& given) {
  NetworkModel network = selector_network_model();
  if (given.alpha_s) network.alpha_s = *given.alpha_s;
  if (given.beta_s_per_byte) network.beta_s_per_byte = *given.beta_s_per_byte;
  if (given.gamma_s_per_byte) network.gamma_s_per_byte = *given.gamma_s_per_byte;
  if (given.shm_alpha_s) network.shm_alpha_s = *given.shm_alpha_s;
  if (given.shm_beta_s_per_byte) network.shm_beta_s_per_byte = *given.shm_beta_s_per_byte;
  return network;
}

Algorithm choose_over_network(OpKind collective, int group_size, std::size_t bytes,
                              bool equal_blocks, const NetworkModel& network) {
  switch (collective) {
    case OpKind::kAllReduce:
      return fastest_of(collective, kAllReduceCandidates, group_size, bytes, network);
    case OpKind::kBroadcast:
      return fastest_of(collective, allowed_broadcast(group_size), group_size, bytes, network);
    case OpKind::kAllGather:
      // bytes is the whole gathered output.
      return fastest_of(collective, allowed_all_gather(equal_blocks), group_size, bytes, network);
    case OpKind::kReduceScatter:
      return fastest_of(collective, kReduceScatterCandidates, group_size, bytes, network);
    default:
      return algorithms_of(collective).front();
  }
}

Algorithm choose_across_hosts(OpKind collective, const HostSpread& spread, std::size_t bytes,
                              bool equal_blocks, const NetworkModel& network) {
  const NetworkModel shared = sharing_links(network, spread.largest_host);
  const Algorithm flat = choose_over_network(collective, spread.ranks, bytes, equal_blocks, shared);
  // The leaders' call as the hierarchical code makes it: their blocks are the hosts' parts,
  // equal when the hosts are; all_to_all's runs pairwise whatever its size.
  const Algorithm leaders =
      choose_over_network(collective, spread.hosts, bytes, equal_blocks && spread.even(), network);
  const double flat_seconds = predicted_seconds(collective, flat, spread.ranks, bytes, shared);
  const double hierarchical_seconds =
      predicted_hierarchical_seconds(collective, leaders, spread, bytes, network);
  return flat_seconds < hierarchical_seconds ? flat : Algorithm::kHierarchical;
}

Algorithm choose_without_shared_memory(const SelectionInput& input) {
  require_selectable(input.collective);
  SelectionInput spread = input;
  spread.single_host = false;
  spread.spans_hosts = false;
  return by_size(spread);
}

}  // namespace weft::coll
