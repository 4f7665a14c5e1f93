// The cost model: how long each of weft's algorithms takes on a network described by three
// numbers, and which one is fastest. Pure functions: no sockets, no I/O, no allocation except
// where a function returns a vector. Thread-safe. docs/scaling.md derives every formula and
// shows what they predict for 8 to 4096 ranks.
//
// Model (Hockney, with a reduction term as in Thakur, Rabenseifner and Gropp): a message of m
// bytes between two ranks costs alpha + m beta, reducing m bytes costs m gamma, a rank sends
// and receives at once (full duplex), and every rank has its own link (a switched network:
// pairs that share no rank do not slow each other down). p is the group size, n the size the
// selector sees: the per-rank message for all_reduce, broadcast and reduce, the bytes each
// rank sends for all_to_all, the whole gathered (or scattered, or reduced-and-scattered)
// buffer for all_gather, gather, scatter and reduce_scatter.
//
// The formulas follow weft's implementations (src/coll/<collective>/), not the textbook's:
// recursive doubling and Rabenseifner fold a non-power-of-two p onto the largest power of two
// below it (two more steps of n bytes), the ring and the binomial trees send in segments of
// kModelSegmentBytes, Bruck's all-gather ends with a local rotation (costed like a reduction
// pass over the output, gamma per byte), and the pairwise all-to-all posts every exchange at
// once up to 1 MiB (one alpha instead of p - 1).
//
// Across hosts (docs/scaling.md, "Ranks that share a host"): a group of p ranks on h hosts, the
// largest with k ranks. A flat algorithm's ranks no longer have a link each: the k ranks of a
// host share its one link, so their bytes serialize there, which the model bounds by pricing
// every byte as if it crossed hosts while the host's k ranks send alike (beta times k). The
// hierarchical algorithm pays, instead, its phases within hosts over shared memory (shm_alpha
// per phase, shm_beta per byte its busiest member copies, gamma per byte of a local pass) and
// the leaders' algorithm on h ranks, each with a link of its own.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "coll/selector.h"
#include "core/op_signature.h"

namespace weft::coll {

struct NetworkModel {
  double alpha_s = 0;           // latency of one message, seconds
  double beta_s_per_byte = 0;   // transfer time per byte (1 / bandwidth)
  double gamma_s_per_byte = 0;  // reduction time per byte (a local pass over memory)
  // Within a host, over shared memory: one phase (a shared-memory collective of a host's
  // members) costs shm_alpha_s + m shm_beta_s_per_byte, m the bytes its busiest member copies.
  double shm_alpha_s = 0;
  double shm_beta_s_per_byte = 0;
};

// Where a group's ranks run: `ranks` ranks on `hosts` hosts, the most crowded with
// `largest_host` of them (the one whose link and leader are the bottleneck).
struct HostSpread {
  int ranks = 1;
  int hosts = 1;
  int largest_host = 1;
  // Every host has as many ranks (the leaders' all_gather then has equal blocks).
  bool even() const { return hosts * largest_host == ranks; }
};

// The segment weft's pipelined algorithms cut messages into (CollectiveOptions::segment_bytes'
// default).
inline constexpr std::size_t kModelSegmentBytes = std::size_t{1} << 20;

// The algorithms the model prices for a collective: every algorithm of algorithms_of() except
// shm and hierarchical, which run on shared memory. Empty for collectives it does not cover.
std::span<const Algorithm> modeled_algorithms(core::OpKind collective);

// Predicted seconds of `algorithm` running `collective` on p ranks with n bytes (module
// comment). Throws weft::Error(kInvalidArgument) naming the pair when modeled_algorithms()
// does not list `algorithm` for `collective`, or when p < 1.
double predicted_seconds(core::OpKind collective, Algorithm algorithm, int p, std::size_t n,
                         const NetworkModel& network);

// The network a flat algorithm sees when `ranks_per_link` ranks share each host's link: their
// bytes serialize on it (beta times ranks_per_link); latency and reduction are unchanged.
NetworkModel sharing_links(const NetworkModel& network, int ranks_per_link);

// Predicted seconds of a flat (modeled) `algorithm` on a group spread as `spread`: the
// algorithm on spread.ranks ranks over sharing_links(network, spread.largest_host).
double predicted_seconds_on_hosts(core::OpKind collective, Algorithm algorithm,
                                  const HostSpread& spread, std::size_t n,
                                  const NetworkModel& network);

// Predicted seconds of the hierarchical algorithm of `collective` on `spread` (n as for the
// flat ones): its phases within the largest host over shared memory plus `leaders` (the
// leaders' algorithm, modeled for `collective`) on spread.hosts ranks, following
// coll/hierarchical/. Throws weft::Error(kInvalidArgument) for a collective without a
// hierarchical algorithm or a spread of fewer than 2 hosts.
double predicted_hierarchical_seconds(core::OpKind collective, Algorithm leaders,
                                      const HostSpread& spread, std::size_t n,
                                      const NetworkModel& network);

// The fastest of `candidates` by the model; ties go to the earlier candidate. `candidates`
// must not be empty and must all be modeled for `collective`.
Algorithm fastest_of(core::OpKind collective, std::span<const Algorithm> candidates, int p,
                     std::size_t n, const NetworkModel& network);

// The fastest of all modeled_algorithms(collective).
Algorithm best_algorithm(core::OpKind collective, int p, std::size_t n,
                         const NetworkModel& network);

// A size where a choice changes: `from` is chosen at bytes - 1, `to` at bytes.
struct ChoiceChange {
  std::size_t bytes = 0;
  Algorithm from{};
  Algorithm to{};
  friend bool operator==(const ChoiceChange&, const ChoiceChange&) = default;
};

// Every size in (lo, hi] where choose(bytes) differs from choose(bytes - 1), in increasing
// order: choose is sampled at 64 points per doubling of the size and every change between two
// samples is bisected to the exact byte. A choice that changes and changes back between two
// samples (1.1% apart) is missed; the model's choices do not (docs/scaling.md).
std::vector<ChoiceChange> find_choice_changes(const std::function<Algorithm(std::size_t)>& choose,
                                              std::size_t lo, std::size_t hi);

}  // namespace weft::coll
