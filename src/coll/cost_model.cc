#include "coll/cost_model.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <string>

#include "weft/error.h"

namespace weft::coll {

using core::OpKind;

namespace {

// Everything one formula needs, named as in the papers.
struct Terms {
  double p;      // group size
  double n;      // bytes (module comment of cost_model.h)
  double L;      // ceil(log2 p): depth of a binomial tree, rounds of Bruck and dissemination
  double q;      // largest power of two <= p: what recursive doubling and halving run on
  double lg_q;   // log2 q
  double fold;   // 1 when p is not a power of two (the extra ranks fold in and out), else 0
  double alpha;  // seconds per message
  double beta;   // seconds per byte sent
  double gamma;  // seconds per byte reduced
};

Terms terms_of(int p, std::size_t n, const NetworkModel& network) {
  const auto size = static_cast<unsigned>(p);
  const unsigned q = std::bit_floor(size);
  return Terms{static_cast<double>(p),
               static_cast<double>(n),
               static_cast<double>(std::bit_width(size - 1)),
               static_cast<double>(q),
               static_cast<double>(std::bit_width(q) - 1),
               q == size ? 0.0 : 1.0,
               network.alpha_s,
               network.beta_s_per_byte,
               network.gamma_s_per_byte};
}

// Messages that carry `bytes` when cut into segments (one even for an empty message).
double segments(double bytes) {
  return std::max(1.0, std::ceil(bytes / static_cast<double>(kModelSegmentBytes)));
}

// One pipelined receive-reduce-forward of `bytes` in segments: while one segment is reduced
// the next one arrives, so all but the last segment cost the slower of the two per byte; the
// last is received, then reduced. Unsegmented (bytes <= a segment) that is bytes (beta+gamma).
double received_and_reduced(double bytes, const Terms& t) {
  const double last = std::min(bytes, static_cast<double>(kModelSegmentBytes));
  return (bytes - last) * std::max(t.beta, t.gamma) + last * (t.beta + t.gamma);
}

// all_reduce: log2 q rounds of whole-buffer swaps, plus the fold and unfold of the extra ranks.
double recursive_doubling_all_reduce(const Terms& t) {
  return (t.lg_q + 2 * t.fold) * (t.alpha + t.n * t.beta) + (t.lg_q + t.fold) * t.n * t.gamma;
}

// all_reduce: reduce-scatter by halving and all-gather by doubling on q ranks, plus the fold
// (whole buffer in, reduced) and unfold (whole buffer out) of the extra ranks.
double rabenseifner_all_reduce(const Terms& t) {
  const double share = (t.q - 1) / t.q * t.n;
  return 2 * t.lg_q * t.alpha + 2 * share * t.beta + share * t.gamma +
         t.fold * (2 * (t.alpha + t.n * t.beta) + t.n * t.gamma);
}

// all_reduce: p - 1 reduce-scatter steps then p - 1 all-gather steps of one block of n / p
// bytes, each block in segments.
double ring_all_reduce(const Terms& t) {
  const double block = t.n / t.p;
  const double steps = t.p - 1;
  return 2 * steps * segments(block) * t.alpha + steps * block * t.beta +
         steps * received_and_reduced(block, t);
}

// all_reduce: everyone to rank 0, which reduces p inputs and sends the result back: rank 0's
// link carries (p - 1) n bytes each way, one after the other.
double naive_all_reduce(const Terms& t) {
  return 2 * (t.p - 1) * (t.alpha + t.n * t.beta) + (t.p - 1) * t.n * t.gamma;
}

// broadcast: the root sends every segment to each of its ceil(log2 p) children; its link is
// the bottleneck, so segmenting adds messages but no overlap the root could use.
double binomial_broadcast(const Terms& t) { return t.L * (segments(t.n) * t.alpha + t.n * t.beta); }

// broadcast: binomial scatter of p blocks (the root sends (p-1)/p n), then a ring all-gather.
double scatter_allgather_broadcast(const Terms& t) {
  return (t.L + t.p - 1) * t.alpha + 2 * (t.p - 1) / t.p * t.n * t.beta;
}

// reduce: the root receives each of its ceil(log2 p) children's n bytes in segments and
// reduces each segment while the next arrives.
double binomial_reduce(const Terms& t) {
  return t.L * (segments(t.n) * t.alpha + received_and_reduced(t.n, t));
}

double ring_all_gather(const Terms& t) { return (t.p - 1) * (t.alpha + t.n / t.p * t.beta); }

// all_gather: ceil(log2 p) rounds, every rank receiving (p-1)/p n bytes, then a rotation of
// the whole output into rank order (a local pass over n bytes; rank 0 skips it, the others
// finish last).
double bruck_all_gather(const Terms& t) {
  return t.L * t.alpha + (t.p - 1) / t.p * t.n * t.beta + t.n * t.gamma;
}

// gather and scatter: one message per tree edge; the root's link carries (p-1)/p n bytes.
double binomial_gather_or_scatter(const Terms& t) {
  return t.L * t.alpha + (t.p - 1) / t.p * t.n * t.beta;
}

double ring_reduce_scatter(const Terms& t) {
  const double block = t.n / t.p;
  return (t.p - 1) * (segments(block) * t.alpha + received_and_reduced(block, t));
}

// reduce_scatter: log2 q halving exchanges, each received whole and then reduced, plus the fold
// (a whole input in, reduced) and unfold (one block out) of the extra ranks.
double recursive_halving_reduce_scatter(const Terms& t) {
  const double share = (t.q - 1) / t.q * t.n;
  return t.lg_q * t.alpha + share * (t.beta + t.gamma) +
         t.fold * (2 * t.alpha + t.n * (t.beta + t.gamma) + t.n / t.p * t.beta);
}

// all_to_all: p - 1 exchanges of n / p bytes; up to this many bytes per rank they are all
// posted at once and their latencies overlap.
constexpr double kAllToAllAtOnceBytes = 1 << 20;

double pairwise_all_to_all(const Terms& t) {
  const double latencies = t.n <= kAllToAllAtOnceBytes ? 1 : t.p - 1;
  return latencies * t.alpha + (t.p - 1) / t.p * t.n * t.beta;
}

double dissemination_barrier(const Terms& t) { return t.L * t.alpha; }

[[noreturn]] void not_modeled(OpKind collective, Algorithm algorithm) {
  throw Error(ErrorCode::kInvalidArgument, std::string("the cost model has no formula for ") +
                                               core::name_of(collective) + " algorithm '" +
                                               name_of(algorithm) + "'");
}

double formula(OpKind collective, Algorithm algorithm, const Terms& t) {
  using enum Algorithm;
  switch (collective) {
    case OpKind::kAllReduce:
      if (algorithm == kRing) return ring_all_reduce(t);
      if (algorithm == kRecursiveDoubling) return recursive_doubling_all_reduce(t);
      if (algorithm == kRabenseifner) return rabenseifner_all_reduce(t);
      if (algorithm == kNaive) return naive_all_reduce(t);
      break;
    case OpKind::kBroadcast:
      if (algorithm == kBinomial) return binomial_broadcast(t);
      if (algorithm == kScatterAllgather) return scatter_allgather_broadcast(t);
      break;
    case OpKind::kReduce:
      if (algorithm == kBinomial) return binomial_reduce(t);
      break;
    case OpKind::kAllGather:
      if (algorithm == kRing) return ring_all_gather(t);
      if (algorithm == kBruck) return bruck_all_gather(t);
      break;
    case OpKind::kGather:
    case OpKind::kScatter:
      if (algorithm == kBinomial) return binomial_gather_or_scatter(t);
      break;
    case OpKind::kReduceScatter:
      if (algorithm == kRing) return ring_reduce_scatter(t);
      if (algorithm == kRecursiveHalving) return recursive_halving_reduce_scatter(t);
      break;
    case OpKind::kAllToAll:
      if (algorithm == kPairwise) return pairwise_all_to_all(t);
      break;
    case OpKind::kBarrier:
      if (algorithm == kDissemination) return dissemination_barrier(t);
      break;
    default:
      break;
  }
  not_modeled(collective, algorithm);
}

// --- Across hosts: the hierarchical algorithms' phases (coll/hierarchical/) -------------------

// What the phases of a hierarchical algorithm need: the sizes on the largest host (the last to
// finish each phase) and the leaders' algorithm.
struct Hierarchy {
  OpKind collective;
  Algorithm leaders;  // the leaders' algorithm, on `hosts` ranks
  double n;           // bytes, as for the flat algorithms
  double members;     // ranks on the largest host
  double host_share;  // the largest host's part of a whole buffer: members / p of it
  int hosts;
  const NetworkModel& network;

  // A phase among the host's members over shared memory in which the busiest copies `bytes`
  // (nothing to wait for on a host of one rank).
  double on_host(double bytes) const {
    if (members < 2) return 0;
    return network.shm_alpha_s + bytes * network.shm_beta_s_per_byte;
  }
  // A local pass over `bytes`: a reduction, or the reordering of blocks between rank order and
  // host order.
  double local_pass(double bytes) const { return bytes * network.gamma_s_per_byte; }
  // The leaders' algorithm on `bytes` (as the selector sees them for it), one rank per host.
  double among_leaders(double bytes) const {
    return formula(collective, leaders, terms_of(hosts, static_cast<std::size_t>(bytes), network));
  }
};

double hierarchical_formula(const Hierarchy& x) {
  const double n = x.n;
  switch (x.collective) {
    case OpKind::kAllReduce:  // reduce to the leader, leaders' all_reduce, broadcast
      return x.on_host(n) + x.local_pass(n) + x.among_leaders(n) + x.on_host(n);
    case OpKind::kBroadcast:  // from the root on its host, among leaders, from each leader
      return x.on_host(n) + x.among_leaders(n) + x.on_host(n);
    case OpKind::kReduce:  // reduce to the leader, leaders' reduce, hand-off to the root
      return x.on_host(n) + x.local_pass(n) + x.among_leaders(n) + x.on_host(n);
    case OpKind::kAllGather:  // host's blocks, leaders' all_gather, broadcast, rank order
      return x.on_host(x.host_share) + x.among_leaders(n) + x.on_host(n) + x.local_pass(n);
    case OpKind::kReduceScatter:  // host order, reduce, leaders' reduce_scatter, scatter
      return x.local_pass(n) + x.on_host(n) + x.local_pass(n) + x.among_leaders(n) +
             x.on_host(x.host_share);
    case OpKind::kAllToAll: {
      // Pack by destination host, gather to the leader, regroup by host, exchange among the
      // leaders (each sends its host's k n bytes), regroup by member, scatter.
      const double host_bytes = x.members * n;
      return x.local_pass(n) + x.on_host(host_bytes) + x.local_pass(2 * host_bytes) +
             x.among_leaders(host_bytes) + x.on_host(host_bytes);
    }
    case OpKind::kGather:  // gather to the leader, leaders' gather, rank order, hand-off
      return x.on_host(x.host_share) + x.among_leaders(n) + x.local_pass(n) + x.on_host(n);
    case OpKind::kScatter:  // host order, hand-off to the leader, leaders' scatter, scatter
      return x.local_pass(n) + x.on_host(n) + x.among_leaders(n) + x.on_host(x.host_share);
    case OpKind::kBarrier:  // arrive on the host, among leaders, leave the host
      return x.on_host(0) + x.among_leaders(0) + x.on_host(0);
    default:
      break;
  }
  throw Error(ErrorCode::kInvalidArgument, std::string("the cost model has no hierarchical ") +
                                               "formula for " + core::name_of(x.collective));
}

}  // namespace

std::span<const Algorithm> modeled_algorithms(OpKind collective) {
  // Scan has an algorithm but no formula here.
  if (collective == OpKind::kScan) return {};
  // algorithms_of lists the shared-memory ones (shm, hierarchical) after all the others.
  const std::vector<Algorithm>& all = algorithms_of(collective);
  auto shared_memory = std::find_if(all.begin(), all.end(), [](Algorithm algorithm) {
    return algorithm == Algorithm::kShm || algorithm == Algorithm::kHierarchical;
  });
  return {all.data(), static_cast<std::size_t>(shared_memory - all.begin())};
}

double predicted_seconds(OpKind collective, Algorithm algorithm, int p, std::size_t n,
                         const NetworkModel& network) {
  if (p < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "the cost model needs a group size >= 1, not " + std::to_string(p));
  }
  const Terms t = terms_of(p, n, network);
  const double seconds = formula(collective, algorithm, t);
  return p == 1 ? 0.0 : seconds;
}

NetworkModel sharing_links(const NetworkModel& network, int ranks_per_link) {
  NetworkModel shared = network;
  shared.beta_s_per_byte *= std::max(1, ranks_per_link);
  return shared;
}

double predicted_seconds_on_hosts(OpKind collective, Algorithm algorithm, const HostSpread& spread,
                                  std::size_t n, const NetworkModel& network) {
  return predicted_seconds(collective, algorithm, spread.ranks, n,
                           sharing_links(network, spread.largest_host));
}

double predicted_hierarchical_seconds(OpKind collective, Algorithm leaders,
                                      const HostSpread& spread, std::size_t n,
                                      const NetworkModel& network) {
  if (spread.hosts < 2 || spread.largest_host < 1 || spread.ranks < spread.hosts) {
    throw Error(ErrorCode::kInvalidArgument,
                "the hierarchical cost needs ranks on at least 2 hosts, not " +
                    std::to_string(spread.ranks) + " ranks on " + std::to_string(spread.hosts) +
                    " hosts (largest " + std::to_string(spread.largest_host) + ")");
  }
  const double bytes = static_cast<double>(n);
  return hierarchical_formula(
      Hierarchy{collective, leaders, bytes, static_cast<double>(spread.largest_host),
                bytes * spread.largest_host / spread.ranks, spread.hosts, network});
}

Algorithm fastest_of(OpKind collective, std::span<const Algorithm> candidates, int p, std::size_t n,
                     const NetworkModel& network) {
  if (candidates.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("no candidate algorithms for ") + core::name_of(collective));
  }
  Algorithm best = candidates.front();
  double best_seconds = predicted_seconds(collective, best, p, n, network);
  for (Algorithm candidate : candidates.subspan(1)) {
    const double seconds = predicted_seconds(collective, candidate, p, n, network);
    if (seconds < best_seconds) {
      best = candidate;
      best_seconds = seconds;
    }
  }
  return best;
}

Algorithm best_algorithm(OpKind collective, int p, std::size_t n, const NetworkModel& network) {
  return fastest_of(collective, modeled_algorithms(collective), p, n, network);
}

std::vector<ChoiceChange> find_choice_changes(const std::function<Algorithm(std::size_t)>& choose,
                                              std::size_t lo, std::size_t hi) {
  constexpr double kStep = 1.0109 /* 2^(1/64) */;
  std::vector<ChoiceChange> changes;
  std::size_t left = lo;
  Algorithm left_choice = choose(left);
  while (left < hi) {
    const auto grown = static_cast<std::size_t>(static_cast<double>(left) * kStep);
    const std::size_t right = std::min(hi, std::max(left + 1, grown));
    const Algorithm right_choice = choose(right);
    // Bisect (left, right] while its ends differ: the first byte whose choice differs from the
    // left end's is a change; the rest of the interval is scanned again from there.
    std::size_t low = left;
    std::size_t high = right;
    if (right_choice != left_choice) {
      while (high - low > 1) {
        const std::size_t middle = low + (high - low) / 2;
        (choose(middle) == left_choice ? low : high) = middle;
      }
      const Algorithm to = choose(high);
      changes.push_back({high, left_choice, to});
      left = high;
      left_choice = to;
      continue;
    }
    left = right;
  }
  return changes;
}

}  // namespace weft::coll
