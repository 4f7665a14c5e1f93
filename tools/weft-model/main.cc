// weft-model — the cost model's predictions for 8 to 4096 ranks (docs/scaling.md): each
// algorithm's time per collective, group size and message size on a network given by its
// alpha, beta and gamma (or measured here with --measure), the selector's choice marked, and
// the sizes where that choice changes. --plot draws the times with matplotlib. --per-host
// prices groups over hosts: hierarchical against flat.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "coll/selector.h"
#include "measure.h"
#include "model_plot.h"
#include "quantities.h"
#include "report.h"
#include "util/network_settings.h"

namespace {

using weft::core::OpKind;

constexpr OpKind kModeled[] = {OpKind::kAllReduce,     OpKind::kBroadcast, OpKind::kAllGather,
                               OpKind::kReduceScatter, OpKind::kAllToAll,  OpKind::kReduce,
                               OpKind::kGather,        OpKind::kScatter,   OpKind::kBarrier};

std::vector<OpKind> parse_collectives(const std::string& text) {
  if (text == "all") return {std::begin(kModeled), std::end(kModeled)};
  std::vector<OpKind> chosen;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string name = text.substr(start, comma - start);
    std::string known;
    bool found = false;
    for (OpKind kind : kModeled) {
      known += (known.empty() ? "" : ", ") + std::string(weft::core::name_of(kind));
      if (name == weft::core::name_of(kind)) {
        chosen.push_back(kind);
        found = true;
      }
    }
    if (!found) {
      throw std::invalid_argument("--collective: no model for '" + name + "' (known: " + known +
                                  ", or all)");
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return chosen;
}

struct Flags {
  std::string alpha;
  std::string beta;
  std::string gamma;
  bool measure = false;
  std::string collectives = "all_reduce,broadcast,all_gather";
  std::string ranks = "8,16,32,64,128,256,512,1024,2048,4096";
  std::string sizes = "8,64K,1M,16M,64M";
  bool csv = false;
  std::string plot;
  std::string shm_alpha;
  std::string shm_beta;
  int per_host = 0;
};

// The network: the selector's own (with the parts WEFT_NET_* give, as a job's selector would
// price them) unless measured; each given flag overrides its part.
weft::coll::NetworkModel network_of(const Flags& flags) {
  weft::coll::NetworkModel network =
      flags.measure ? weft_model::measure_here()
                    : weft::coll::selector_network_model(weft::util::read_network_settings());
  if (!flags.alpha.empty()) network.alpha_s = weft_model::parse_seconds("--alpha", flags.alpha);
  if (!flags.beta.empty()) {
    network.beta_s_per_byte = weft_model::parse_seconds_per_byte("--beta", flags.beta);
  }
  if (!flags.gamma.empty()) {
    network.gamma_s_per_byte = weft_model::parse_seconds_per_byte("--gamma", flags.gamma);
  }
  if (!flags.shm_alpha.empty()) {
    network.shm_alpha_s = weft_model::parse_seconds("--shm-alpha", flags.shm_alpha);
  }
  if (!flags.shm_beta.empty()) {
    network.shm_beta_s_per_byte = weft_model::parse_seconds_per_byte("--shm-beta", flags.shm_beta);
  }
  return network;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app("weft-model: predicted collective times from a cost model (docs/scaling.md)",
               "weft-model");
  app.add_option("--alpha", flags.alpha,
                 "latency per message: 5us, 2e-5 (default: the selector's, or WEFT_NET_ALPHA)");
  app.add_option(
      "--beta", flags.beta,
      "transfer per byte: 10GB/s, 100Gbit/s or seconds per byte (default: WEFT_NET_BETA)");
  app.add_option("--gamma", flags.gamma,
                 "reduction per byte: 20GB/s or seconds per byte (default: WEFT_NET_GAMMA)");
  app.add_flag("--measure", flags.measure,
               "measure alpha and beta (TCP ping-pong on loopback) and gamma (reduce kernel) here");
  app.add_option("--collective", flags.collectives, "comma-separated collectives, or all")
      ->capture_default_str();
  app.add_option("--ranks", flags.ranks, "comma-separated group sizes")->capture_default_str();
  app.add_option("--sizes", flags.sizes, "comma-separated message sizes (K, M, G: binary)")
      ->capture_default_str();
  app.add_flag("--csv", flags.csv, "CSV rows instead of tables");
  app.add_option("--plot", flags.plot, "also draw the times into this PNG (needs matplotlib)");
  app.add_option("--per-host", flags.per_host,
                 "each group size as hosts of this many ranks: hierarchical against the best "
                 "flat algorithm, as the selector prices them (not with --csv or --plot)");
  app.add_option(
      "--shm-alpha", flags.shm_alpha,
      "shared memory, time of a phase: 3us (default: the selector's, or WEFT_SHM_ALPHA)");
  app.add_option("--shm-beta", flags.shm_beta,
                 "shared memory, copy per byte: 4GB/s (default: WEFT_SHM_BETA)");
  CLI11_PARSE(app, argc, argv);
  try {
    weft_model::Request request;
    request.collectives = parse_collectives(flags.collectives);
    request.ranks = weft_model::parse_ranks("--ranks", flags.ranks);
    request.sizes = weft_model::parse_sizes("--sizes", flags.sizes);
    std::string python;
    std::string script;
    if (!flags.plot.empty()) {
      script = weft_model::find_model_plot_script();
      python = weft_bench::find_plot_python(script);  // before measuring: fail early
    }
    request.network = network_of(flags);
    if (flags.per_host > 0) {
      if (flags.csv || !flags.plot.empty()) {
        throw std::invalid_argument("--per-host prints a table only: not with --csv or --plot");
      }
      weft_model::print_across_hosts(stdout, request, flags.per_host);
      return 0;
    }
    if (flags.csv) {
      weft_model::print_csv(stdout, request);
    } else {
      weft_model::print_text(stdout, request);
    }
    if (!flags.plot.empty()) {
      const std::string error = weft_model::draw_model_plot(python, script, request, flags.plot);
      if (!error.empty()) throw std::runtime_error(error);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft-model: %s\n", e.what());
    return 2;
  }
  return 0;
}
