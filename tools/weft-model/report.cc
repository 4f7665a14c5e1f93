#include "report.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "quantities.h"

namespace weft_model {

using weft::coll::Algorithm;
using weft::coll::ChoiceChange;
using weft::coll::name_of;
using weft::core::OpKind;

Algorithm selected(OpKind collective, int ranks, std::size_t bytes,
                   const weft::coll::NetworkModel& network) {
  return weft::coll::choose_over_network(collective, ranks, bytes, /*equal_blocks=*/true, network);
}

std::vector<ChoiceChange> changes(OpKind collective, int ranks, const Request& request) {
  const std::size_t largest = *std::max_element(request.sizes.begin(), request.sizes.end());
  return weft::coll::find_choice_changes(
      [&](std::size_t bytes) { return selected(collective, ranks, bytes, request.network); }, 1,
      std::max<std::size_t>(largest, 2));
}

namespace {

void print_parameters(std::FILE* out, const weft::coll::NetworkModel& network) {
  std::fprintf(out, "network: alpha %s, beta %.3g s/B (%.3g GB/s), gamma %.3g s/B (%.3g GB/s)\n",
               time_text(network.alpha_s).c_str(), network.beta_s_per_byte,
               network.beta_s_per_byte > 0 ? 1e-9 / network.beta_s_per_byte : 0.0,
               network.gamma_s_per_byte,
               network.gamma_s_per_byte > 0 ? 1e-9 / network.gamma_s_per_byte : 0.0);
}

void print_table(std::FILE* out, OpKind collective, std::size_t bytes, const Request& request) {
  const auto algorithms = weft::coll::modeled_algorithms(collective);
  std::fprintf(out, "\n%s, %s bytes%s (* the selector's choice)\n", weft::core::name_of(collective),
               size_text(bytes).c_str(),
               collective == OpKind::kAllGather || collective == OpKind::kReduceScatter ||
                       collective == OpKind::kGather || collective == OpKind::kScatter
                   ? " in all"
                   : "");
  std::fprintf(out, "%8s", "ranks");
  for (Algorithm algorithm : algorithms) std::fprintf(out, "  %19s", name_of(algorithm));
  std::fprintf(out, "\n");
  for (int ranks : request.ranks) {
    const Algorithm choice = selected(collective, ranks, bytes, request.network);
    std::fprintf(out, "%8d", ranks);
    for (Algorithm algorithm : algorithms) {
      const double seconds =
          weft::coll::predicted_seconds(collective, algorithm, ranks, bytes, request.network);
      std::fprintf(out, "  %18s%c", time_text(seconds).c_str(), algorithm == choice ? '*' : ' ');
    }
    std::fprintf(out, "\n");
  }
}

void print_changes(std::FILE* out, OpKind collective, const Request& request) {
  if (weft::coll::modeled_algorithms(collective).size() < 2) return;
  std::fprintf(out, "\n%s: where the selector's choice changes\n", weft::core::name_of(collective));
  for (int ranks : request.ranks) {
    std::string line;
    for (const ChoiceChange& change : changes(collective, ranks, request)) {
      line += (line.empty() ? "" : ", ") + std::string(name_of(change.to)) + " from " +
              std::to_string(change.bytes) + " B";
    }
    std::fprintf(out, "%8d ranks: %s%s\n", ranks,
                 name_of(selected(collective, ranks, 1, request.network)),
                 line.empty() ? " at every size" : (", " + line).c_str());
  }
}

}  // namespace

void print_text(std::FILE* out, const Request& request) {
  print_parameters(out, request.network);
  for (OpKind collective : request.collectives) {
    for (std::size_t bytes : request.sizes) print_table(out, collective, bytes, request);
    print_changes(out, collective, request);
  }
}

void print_across_hosts(std::FILE* out, const Request& request, int per_host) {
  for (int ranks : request.ranks) {
    if (per_host < 1 || ranks % per_host != 0 || ranks / per_host < 2) {
      throw std::invalid_argument("--per-host " + std::to_string(per_host) + ": " +
                                  std::to_string(ranks) +
                                  " ranks do not make 2 or more hosts of that many");
    }
  }
  const weft::coll::NetworkModel& network = request.network;
  print_parameters(out, network);
  std::fprintf(out, "shared memory: alpha %s a phase, beta %.3g s/B (%.3g GB/s)\n",
               time_text(network.shm_alpha_s).c_str(), network.shm_beta_s_per_byte,
               network.shm_beta_s_per_byte > 0 ? 1e-9 / network.shm_beta_s_per_byte : 0.0);
  const weft::coll::NetworkModel shared = weft::coll::sharing_links(network, per_host);
  for (OpKind collective : request.collectives) {
    std::fprintf(out, "\n%s, hosts of %d ranks (* the selector's choice)\n",
                 weft::core::name_of(collective), per_host);
    std::fprintf(out, "%8s %6s %10s %14s %19s %14s\n", "ranks", "hosts", "bytes", "hierarchical",
                 "flat", "flat time");
    for (int ranks : request.ranks) {
      const weft::coll::HostSpread spread{ranks, ranks / per_host, per_host};
      for (std::size_t bytes : request.sizes) {
        const Algorithm flat = selected(collective, ranks, bytes, shared);
        const Algorithm leaders = selected(collective, spread.hosts, bytes, network);
        const bool hierarchical =
            weft::coll::choose_across_hosts(collective, spread, bytes, true, network) ==
            Algorithm::kHierarchical;
        const double hierarchical_seconds =
            weft::coll::predicted_hierarchical_seconds(collective, leaders, spread, bytes, network);
        const double flat_seconds =
            weft::coll::predicted_seconds(collective, flat, ranks, bytes, shared);
        std::fprintf(out, "%8d %6d %10s %13s%c %19s %13s%c\n", ranks, spread.hosts,
                     size_text(bytes).c_str(), time_text(hierarchical_seconds).c_str(),
                     hierarchical ? '*' : ' ', name_of(flat), time_text(flat_seconds).c_str(),
                     hierarchical ? ' ' : '*');
      }
    }
  }
}

void print_csv(std::FILE* out, const Request& request) {
  std::fprintf(out, "kind,collective,ranks,bytes,algorithm,seconds,selected,from\n");
  for (OpKind collective : request.collectives) {
    const char* name = weft::core::name_of(collective);
    for (int ranks : request.ranks) {
      for (std::size_t bytes : request.sizes) {
        const Algorithm choice = selected(collective, ranks, bytes, request.network);
        for (Algorithm algorithm : weft::coll::modeled_algorithms(collective)) {
          std::fprintf(
              out, "time,%s,%d,%zu,%s,%.9e,%d,\n", name, ranks, bytes, name_of(algorithm),
              weft::coll::predicted_seconds(collective, algorithm, ranks, bytes, request.network),
              algorithm == choice ? 1 : 0);
        }
      }
      for (const ChoiceChange& change : changes(collective, ranks, request)) {
        std::fprintf(out, "change,%s,%d,%zu,%s,,,%s\n", name, ranks, change.bytes,
                     name_of(change.to), name_of(change.from));
      }
    }
  }
}

}  // namespace weft_model
