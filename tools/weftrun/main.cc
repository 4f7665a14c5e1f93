// weftrun — the launcher: starts a job's ranks on this node (and meets the other nodes'
// weftruns), hosts the job's store, forwards output, stops everything when one rank fails.
// See docs/weftrun.md. This file is the glue; each part lives in its own file.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "flight_report.h"
#include "host_launcher.h"
#include "launch_options.h"
#include "line_prefixer.h"
#include "local_host.h"
#include "node_rendezvous.h"
#include "rank_environment.h"
#include "rank_supervisor.h"
#include "signal_relay.h"
#include "store_host.h"
#include "trace_merge.h"
#include "util/random_token.h"

namespace weft::run {
namespace {

// How long node 0 keeps the store up after a failure, so the other nodes see it.
constexpr std::chrono::milliseconds kFailureLinger{10'000};
// Node 0 gives up waiting for the other nodes when nobody but itself has been connected to the
// store for this long (their weftrun and ranks are all gone).
constexpr std::chrono::milliseconds kAbandonedAfter{3'000};

// The job token: --job-token, else WEFT_JOB_TOKEN, else (a job on this node alone) a fresh
// one. A job that spans nodes needs the same token on every node, given by whoever starts the
// weftruns: it is never sent through the store, whose clients must prove they know it.
std::string job_token(const LaunchOptions& options) {
  if (!options.job_token.empty()) return options.job_token;
  const char* env = std::getenv("WEFT_JOB_TOKEN");
  if (env != nullptr && *env != '\0') return env;
  if (options.nnodes > 1) {
    throw std::runtime_error(
        "a job that spans nodes needs its job token on every node: pass the same --job-token "
        "TOKEN (or WEFT_JOB_TOKEN=TOKEN) to the weftrun of each node, e.g. TOKEN=$(openssl "
        "rand -hex 16)");
  }
  return util::random_hex(16);
}

// Node 0 of a multi-node job: keep the store up until every node is done.
int wait_for_other_nodes(NodeRendezvous& rendezvous, StoreHost& store, SignalRelay& signals,
                         const SupervisorResult& result) {
  int exit_code = result.exit_code;
  std::optional<std::chrono::steady_clock::time_point> alone_since;
  auto give_up = [&]() {
    if (int signo = signals.take_termination_signal(); signo != 0) {
      print_launcher_line("received a signal while waiting for the other nodes; exiting");
      exit_code = 128 + signo;
      return true;
    }
    if (store.num_clients() > 1) {
      alone_since.reset();
      return false;
    }
    auto now = std::chrono::steady_clock::now();
    if (!alone_since) alone_since = now;
    if (now - *alone_since < kAbandonedAfter) return false;
    print_launcher_line("the other nodes left without reporting that their ranks ended");
    if (exit_code == 0) exit_code = 1;
    return true;
  };
  std::optional<std::chrono::milliseconds> linger;
  if (result.failure) linger = kFailureLinger;
  std::optional<JobFailure> failure = rendezvous.wait_until_all_done(give_up, linger);
  if (exit_code == 0 && failure) {
    print_launcher_line("the job failed on another node: " + failure->line);
    exit_code = failure->exit_code;
  }
  return exit_code;
}

// When the job failed or was interrupted: the ranks' last ops side by side, from the dumps
// they wrote into WEFT_FLIGHT_DIR.
void print_flight_table(const FlightDir& flight, const JobLayout& layout) {
  if (flight.path().empty()) return;
  std::vector<int> ranks;
  for (int local = 0; local < layout.nproc_per_node; ++local) {
    ranks.push_back(layout.global_rank(local));
  }
  std::string table = flight_table_from(flight.path(), ranks);
  if (table.empty()) return;
  print_launcher_line("last ops of each rank (flight recorder: seq op bytes state, newest last):");
  std::fputs(table.c_str(), stderr);
}

// WEFT_TRACE=DIR: one trace.json of every rank's timeline (node 0 merges what DIR holds).
void merge_traces(const JobLayout& layout) {
  const char* dir = std::getenv("WEFT_TRACE");
  if (dir == nullptr || *dir == '\0' || layout.node_rank != 0) return;
  try {
    MergeResult merged = merge_rank_traces(dir);
    if (merged.ranks == 0) return;
    print_launcher_line("merged the timelines of " + std::to_string(merged.ranks) + " ranks (" +
                        std::to_string(merged.events) + " ops) into " + merged.path);
  } catch (const std::exception& error) {
    print_launcher_line(std::string("cannot merge the ranks' timelines: ") + error.what());
  }
}

int launch(const LaunchOptions& options) {
  JobLayout layout;
  layout.nproc_per_node = options.nproc_per_node;
  layout.nnodes = options.nnodes;
  layout.node_rank = options.node_rank;

  std::string token = job_token(options);
  std::unique_ptr<StoreHost> store;
  if (options.nnodes == 1 && !options.master_given) {
    store = StoreHost::on_free_local_port(token);
    layout.master_addr = "127.0.0.1";
    layout.store_addr = join_host_port("127.0.0.1", store->port());
    layout.master_port = pick_free_port();
  } else {
    if (options.node_rank == 0) {
      // Other nodes reach the store through --master-addr, which may name this host in a way
      // it cannot bind (a name of the cluster's, a NAT): every address. A job on this node
      // alone binds the address its ranks use, loopback by default, out of other hosts' reach.
      const std::string bind = options.nnodes == 1 ? options.master_addr : "";
      try {
        store = StoreHost::on_port(bind, options.master_port, token);
      } catch (const std::exception& error) {
        throw std::runtime_error("cannot host the job's store on port " +
                                 std::to_string(options.master_port) + ": " + error.what());
      }
    }
    layout.master_addr = options.master_addr;
    layout.master_port = options.master_port + 1;  // torch's own store, not weft's
    layout.store_addr = join_host_port(options.master_addr, options.master_port);
  }

  std::unique_ptr<NodeRendezvous> rendezvous;
  if (options.nnodes > 1) {
    // Node 0 talks to its own store over loopback; the others through --master-addr.
    std::string host = options.node_rank == 0 ? "127.0.0.1" : options.master_addr;
    try {
      rendezvous = std::make_unique<NodeRendezvous>(
          host, options.master_port, options.nnodes, options.node_rank,
          std::chrono::seconds(options.join_timeout_seconds), token);
      rendezvous->join(options.nproc_per_node);
    } catch (const std::exception& error) {
      throw std::runtime_error("cannot join the job at " + layout.store_addr + ": " + error.what());
    }
  }
  layout.job_token = token;

  FlightDir flight;
  SignalRelay signals;
  signals.install();
  SupervisorOptions supervisor_options;
  supervisor_options.command = options.command;
  supervisor_options.prefix_output = options.prefix_output;
  supervisor_options.bind = options.bind;
  supervisor_options.timestamp = options.timestamp;
  supervisor_options.output_dir = options.output_dir;
  supervisor_options.time_limit = options.time_limit;
  supervisor_options.time_limit_text = options.time_limit_text;
  supervisor_options.stop_on_stdin_close = options.stop_on_stdin_close;
  supervisor_options.node_host = options.node_host;
  RankSupervisor supervisor(supervisor_options, layout, signals, rendezvous.get());
  SupervisorResult result = supervisor.run();
  if (result.exit_code != 0 || result.failure) print_flight_table(flight, layout);
  merge_traces(layout);

  if (rendezvous == nullptr) return result.exit_code;
  try {
    rendezvous->report_done();
  } catch (const std::exception&) {
    // Node 0 is gone; nothing left to tell.
  }
  if (options.node_rank != 0) return result.exit_code;
  return wait_for_other_nodes(*rendezvous, *store, signals, result);
}

// -x NAME=VALUE: every rank gets it, as if weftrun had inherited it (-x NAME it has already).
void export_variables(const std::vector<std::string>& exports) {
  for (const std::string& item : exports) {
    std::size_t equals = item.find('=');
    if (equals != std::string::npos) {
      ::setenv(item.substr(0, equals).c_str(), item.substr(equals + 1).c_str(), 1);
    }
  }
}

// --hosts / --hostfile: one weftrun per host, started from here (host_launcher.h). A job that
// fits on this host alone is an ordinary one-node job.
int launch_on_hosts(LaunchOptions options) {
  if (options.node_hosts.size() == 1 && is_this_host(options.node_hosts.front())) {
    options.node_hosts.clear();
    return launch(options);
  }
  SignalRelay signals;
  signals.install();
  return HostLauncher(std::move(options), signals).run();
}

}  // namespace
}  // namespace weft::run

int main(int argc, char** argv) {
  using namespace weft::run;
  LaunchOptions options;
  try {
    options = parse_launch_options(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const UsageError& error) {
    print_launcher_line(std::string(error.what()) + " (see weftrun --help)");
    return 2;
  }
  if (options.show_help) {
    std::fputs(usage_text().c_str(), stdout);
    return 0;
  }
  export_variables(options.exports);
  try {
    return options.node_hosts.empty() ? launch(options) : launch_on_hosts(options);
  } catch (const UsageError& error) {
    print_launcher_line(std::string(error.what()) + " (see weftrun --help)");
    return 2;
  } catch (const std::exception& error) {
    print_launcher_line(error.what());
    return 1;
  }
}
