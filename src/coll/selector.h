// The selector: which algorithm runs a collective, from the message size, the group size and
// what the user forced (a per-call option, else WEFT_ALGO).
//
// WEFT_ALGO is either one name, used by every collective that has an algorithm of that name,
// or a list "all_reduce=ring,broadcast=binomial". A name the collective does not have is an
// error naming the valid ones (from the option) or ignored for other collectives (from a bare
// WEFT_ALGO name). Costs: docs/algorithms.md; the cost model behind the choices over TCP:
// coll/cost_model.h and docs/scaling.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/op_signature.h"
#include "util/network_settings.h"

namespace weft::coll {

// Every algorithm of every collective. A typed id, not a name: a small call chooses and
// dispatches one, and comparing names was a visible part of its cost.
enum class Algorithm : uint8_t {
  kShm,
  kHierarchical,
  kRing,
  kRecursiveDoubling,
  kRabenseifner,
  kNaive,
  kBinomial,
  kScatterAllgather,
  kBruck,
  kPairwise,
  kDissemination,
  kRecursiveHalving,
};

namespace detail {
// In the order of Algorithm's values. A table in the header: every collective names its
// algorithm for the flight recorder.
inline constexpr const char* kAlgorithmNames[] = {
    "shm",          "hierarchical", "ring",          "recursive_doubling",
    "rabenseifner", "naive",        "binomial",      "scatter_allgather",
    "bruck",        "pairwise",     "dissemination", "recursive_halving"};
static_assert(std::size(kAlgorithmNames) ==
                  static_cast<std::size_t>(Algorithm::kRecursiveHalving) + 1,
              "a name for every algorithm");
}  // namespace detail

// The name users write in an option or WEFT_ALGO: "shm", "recursive_doubling", ...
inline const char* name_of(Algorithm algorithm) {
  const auto index = static_cast<std::size_t>(algorithm);
  return index < std::size(detail::kAlgorithmNames) ? detail::kAlgorithmNames[index] : "unknown";
}
// Whether the selector chooses for `kind`. Not for point-to-point, which has no algorithms;
// not for exscan either, which the API chooses for as scan, so that one WEFT_ALGO entry
// ("scan=...") and one row of docs/algorithms.md cover both.
bool selects_for(core::OpKind kind);
// The algorithms a collective has, the default first (none where !selects_for(kind)).
const std::vector<Algorithm>& algorithms_of(core::OpKind collective);

struct SelectionInput {
  core::OpKind collective;
  std::size_t bytes = 0;  // the per-rank message (nccl-tests' "size")
  int group_size = 1;
  // all_gather: every rank contributes the same size; all_to_all: every rank sends the same
  // block to every rank (no split sizes, so that every rank sees the same bytes).
  bool equal_blocks = true;
  std::string_view forced;   // the call's option ("": none)
  bool single_host = false;  // every member on one host, shared memory allowed
  bool spans_hosts = false;  // several hosts, some with several members, shared memory allowed
  // With spans_hosts: how many hosts, and the most members one of them has (the cost model
  // prices hierarchical against flat on them; core::HostLayout).
  int hosts = 0;
  int largest_host = 0;
  // WEFT_ALGO's value as the group read it; null: read the environment now.
  const std::string* algorithm_setting = nullptr;
  // WEFT_NET_* as the group read them (core::Communicator::network_settings()); null: none
  // given, the selector's own network.
  const util::NetworkSettings* network = nullptr;
};

// A kind it does not choose for (!selects_for) is a caller's bug: an internal error, as is an
// input with spans_hosts but without its hosts (hosts < 2, largest_host < 2).
//
// A group over hosts runs hierarchical or the best flat algorithm, whichever the cost model
// predicts faster on its layout (choose_across_hosts); ties and all_to_all with split sizes
// (whose ranks see different bytes and must agree without them) go hierarchical.
Algorithm choose_algorithm(const SelectionInput& input);

// Whether `collective` on a group whose members all share one host (SelectionInput's
// single_host) runs the shared-memory algorithm at every size when nothing forces another:
// choose_algorithm's first rule, inline so that callers can skip building its input (a
// visible part of a small call's cost).
inline bool runs_shm_unforced(core::OpKind collective, bool single_host) {
  if (!single_host) return false;
  switch (collective) {
    case core::OpKind::kBroadcast:
    case core::OpKind::kAllReduce:
    case core::OpKind::kReduce:
    case core::OpKind::kAllGather:
    case core::OpKind::kReduceScatter:
    case core::OpKind::kAllToAll:
    case core::OpKind::kBarrier:
      return true;
    default:
      return false;
  }
}
// What runs when "shm" was chosen but the group could not map a shared-memory window, and
// between the leaders of a hierarchical algorithm: the selector's choice for a group of one
// rank per host (WEFT_ALGO and the option ignored).
Algorithm choose_without_shared_memory(const SelectionInput& input);

struct NetworkModel;  // coll/cost_model.h

// The network the selector assumes between ranks that do not share memory: parameters under
// which the cost model makes the choices measured on 2 and 4 ranks (docs/scaling.md).
const NetworkModel& selector_network_model();
// That network with the parts a job gave (WEFT_NET_*) replaced: what choose_algorithm() prices
// on when SelectionInput::network is set.
NetworkModel selector_network_model(const util::NetworkSettings& given);

// The selector's choice without shared memory on `network`: the cost model's fastest among
// the algorithms the selector allows (all_reduce: recursive doubling, Rabenseifner, ring, at
// any group size; broadcast: binomial, scatter_allgather from 5 ranks; all_gather: Bruck when
// every rank contributes the same size, ring); the default algorithm
// for the other collectives. choose_algorithm() uses it with selector_network_model(), or with
// selector_network_model(*input.network) when the input carries the job's numbers.
// Allocates nothing: a small call asks it.
Algorithm choose_over_network(core::OpKind collective, int group_size, std::size_t bytes,
                              bool equal_blocks, const NetworkModel& network);

struct HostSpread;  // coll/cost_model.h

// The selector's choice for a group spread as `spread` (several hosts, some with several
// members) and a collective that has a hierarchical algorithm: hierarchical, with the leaders
// running choose_over_network() on spread.hosts ranks, or the flat algorithm
// choose_over_network() picks on the hosts' shared links (sharing_links), whichever the model
// predicts faster; hierarchical on a tie.
Algorithm choose_across_hosts(core::OpKind collective, const HostSpread& spread, std::size_t bytes,
                              bool equal_blocks, const NetworkModel& network);

}  // namespace weft::coll
