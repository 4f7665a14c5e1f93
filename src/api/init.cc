#include "weft/init.h"

#include <cstdio>

#include "api/launch_environment.h"
#include "api/process_group_impl.h"
#include "coll/cost_model.h"
#include "coll/selector.h"
#include "core/communicator.h"
#include "core/world.h"
#include "store/torch_store_client.h"
#include "util/log.h"
#include "util/log_startup.h"
#include "util/network_settings.h"
#include "util/settings.h"
#include "util/socket.h"
#include "weft/error.h"
#include "weft/file_store.h"
#include "weft/prefix_store.h"
#include "weft/tcp_store.h"
#include "weft/tcp_store_server.h"

namespace weft {

namespace {

ErrorContext init_context() { return ErrorContext{.op = "init_process_group"}; }

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message, init_context());
}

int resolve_count(int given, std::optional<int> from_environment, const char* what,
                  const char* variable) {
  if (given >= 0) return given;
  if (from_environment) return *from_environment;
  invalid(std::string("no ") + what + ": pass it, or set " + variable);
}

// A TCP store at host:port: served here by rank 0 unless a launcher already serves it.
// port_origin: how the port was derived from the launcher's variables, "" when it was given.
void connect_tcp_store(core::WorldOptions& world, const std::string& host, int port,
                       bool serve_here, const std::string& port_origin = "") {
  if (serve_here) {
    TcpStoreServer::Options server_options;
    server_options.port = port;
    // A job whose rendezvous address is loopback lives on this host: its store listens there
    // only, out of reach of other machines.
    util::SocketAddress master = util::resolve(host, port);
    if (master.is_loopback()) server_options.host = master.host();
    try {
      world.store_server = std::make_unique<TcpStoreServer>(server_options);
    } catch (const Error& error) {
      // A port derived from a job id may be taken by another program: say how to choose one.
      if (port_origin.empty() || error.code() != ErrorCode::kSystem) throw;
      throw Error(error.code(),
                  error.message() + " (MASTER_PORT=" + std::to_string(port) + " was derived " +
                      port_origin + "; set MASTER_PORT to another free port)",
                  error.context());
    }
    util::log_info(util::Subsys::kInit,
                   [&] { return "rank 0 serves the store on port " + std::to_string(port); });
  }
  world.store = std::make_shared<TcpStore>(host, port, world.timeout);
  world.route_hint = host;
}

// torchrun's agent serves torch's store where a rank 0 would serve weft's: rendezvous there.
void connect_torch_agent_store(core::WorldOptions& world, const std::string& host, int port,
                               const std::string& prefix) {
  util::log_info(util::Subsys::kInit, [&] {
    return "rendezvous through torchrun's agent store at " + host + ":" + std::to_string(port);
  });
  world.store = std::make_shared<PrefixStore>(
      prefix, std::make_shared<store::TorchStoreClient>(host, port, world.timeout));
  world.route_hint = host;
}

// From here on every line names the rank and group, and WEFT_DEBUG_FILE's %r can expand: the
// rank is set before the rendezvous, whose lines matter most when a job does not start.
void name_this_process_in_logs(int rank, const std::string& group_name) {
  util::set_log_rank(rank);
  util::set_log_group(group_name);
  util::log_startup_once();
}

void log_paths_to_peers(core::World& world) {
  if (!util::log_enabled(util::LogLevel::kInfo, util::Subsys::kTransport)) return;
  if (auto* router = dynamic_cast<transport::Router*>(&world.transport())) router->log_paths();
}

// What the launcher told this rank, and where MASTER_ADDR and MASTER_PORT came from when the
// launcher's variables stood in for them.
void log_launch(const api::LaunchEnvironment& environment) {
  util::log_info(util::Subsys::kInit, [&] {
    auto shown = [](const std::optional<int>& value) {
      return value ? std::to_string(*value) : std::string("?");
    };
    std::string line = std::string("launched by ") + api::to_string(environment.launcher) +
                       ": local rank " + shown(environment.local_rank) + " of " +
                       shown(environment.local_world_size) + " on this node";
    if (environment.master_addr) {
      line += "; MASTER_ADDR " + *environment.master_addr;
      if (!environment.master_addr_origin.empty()) {
        line += " (" + environment.master_addr_origin + ")";
      }
    }
    if (environment.master_port) {
      line += "; MASTER_PORT " + std::to_string(*environment.master_port);
      if (!environment.master_port_origin.empty()) {
        line += " (" + environment.master_port_origin + ")";
      }
    }
    return line;
  });
}

// WEFT_NET_* and WEFT_SHM_* read now, before the rendezvous: a malformed value fails init here,
// on every rank alike, not the first collective that asks the selector.
void log_network_settings() {
  const util::NetworkSettings given = util::read_network_settings();
  if (!given.any()) return;
  util::log_info(util::Subsys::kInit, [&] {
    const coll::NetworkModel network = coll::selector_network_model(given);
    auto rate = [](double seconds_per_byte) {
      return seconds_per_byte > 0 ? 1e-9 / seconds_per_byte : 0.0;
    };
    auto origin = [](const std::optional<double>& part, const char* name) {
      return part ? name : "the selector's";
    };
    char line[400];
    std::snprintf(line, sizeof line,
                  "the selector prices algorithms over the network on alpha %.3g us (%s), beta "
                  "%.3g GB/s (%s), gamma %.3g GB/s (%s), and within a host on shm alpha %.3g us "
                  "(%s), shm beta %.3g GB/s (%s)",
                  network.alpha_s * 1e6, origin(given.alpha_s, "WEFT_NET_ALPHA"),
                  rate(network.beta_s_per_byte), origin(given.beta_s_per_byte, "WEFT_NET_BETA"),
                  rate(network.gamma_s_per_byte), origin(given.gamma_s_per_byte, "WEFT_NET_GAMMA"),
                  network.shm_alpha_s * 1e6, origin(given.shm_alpha_s, "WEFT_SHM_ALPHA"),
                  rate(network.shm_beta_s_per_byte),
                  origin(given.shm_beta_s_per_byte, "WEFT_SHM_BETA"));
    return std::string(line);
  });
}

}  // namespace

LaunchInfo launch_info() {
  api::LaunchEnvironment environment = api::read_launch_environment();
  LaunchInfo info;
  info.launcher = api::to_string(environment.launcher);
  info.rank = environment.rank.value_or(-1);
  info.world_size = environment.world_size.value_or(-1);
  info.local_rank = environment.local_rank.value_or(-1);
  info.local_world_size = environment.local_world_size.value_or(-1);
  info.master_addr = environment.master_addr.value_or("");
  info.master_port = environment.master_port.value_or(-1);
  return info;
}

std::shared_ptr<ProcessGroup> init_process_group(const InitOptions& options) {
  api::LaunchEnvironment environment = api::read_launch_environment();
  core::WorldOptions world;
  world.rank = resolve_count(options.rank, environment.rank, "rank", "RANK");
  world.size =
      resolve_count(options.world_size, environment.world_size, "world size", "WORLD_SIZE");
  if (world.size < 1 || world.rank >= world.size) {
    invalid("rank " + std::to_string(world.rank) + " is not in a world of size " +
            std::to_string(world.size));
  }
  name_this_process_in_logs(world.rank, options.group_name);
  log_launch(environment);
  log_network_settings();
  world.timeout =
      options.timeout.count() > 0 ? options.timeout : util::setting_duration("WEFT_TIMEOUT");
  if (environment.master_addr) world.route_hint = *environment.master_addr;

  std::string method = options.init_method.empty() ? "env://" : options.init_method;
  if (options.store) {
    world.store = options.store;
  } else if (method == "env://") {
    if (environment.store_addr) {
      auto [host, port] = util::split_host_port(*environment.store_addr, "WEFT_STORE_ADDR");
      connect_tcp_store(world, host, port, /*serve_here=*/false);
    } else {
      if (!environment.master_addr) {
        invalid(environment.master_addr_advice.empty()
                    ? "env:// needs MASTER_ADDR (the host of rank 0)"
                    : environment.master_addr_advice);
      }
      if (!environment.master_port) {
        invalid(environment.master_port_advice.empty()
                    ? "env:// needs MASTER_PORT (a free port on rank 0)"
                    : environment.master_port_advice);
      }
      if (environment.torch_agent_store_prefix) {
        connect_torch_agent_store(world, *environment.master_addr, *environment.master_port,
                                  *environment.torch_agent_store_prefix);
      } else {
        connect_tcp_store(world, *environment.master_addr, *environment.master_port,
                          world.rank == 0, environment.master_port_origin);
      }
    }
  } else if (method.rfind("tcp://", 0) == 0) {
    auto [host, port] = util::split_host_port(method.substr(6), "init_method");
    connect_tcp_store(world, host, port, world.rank == 0);
  } else if (method.rfind("file://", 0) == 0) {
    std::string path = method.substr(7);
    if (path.empty()) invalid("init_method '" + method + "' names no file");
    world.store = std::make_shared<FileStore>(path);
  } else {
    invalid("unknown init_method '" + method +
            "': expected env://, tcp://host:port or file:///path");
  }

  auto shared_world = core::World::join(std::move(world));
  log_paths_to_peers(*shared_world);
  int size = shared_world->size();
  std::vector<int> members(size);
  for (int rank = 0; rank < size; ++rank) members[rank] = rank;
  auto communicator = core::Communicator::create(std::move(shared_world), options.group_name,
                                                 std::move(members), /*context_base=*/0);
  return api::make_group(std::move(communicator));
}

}  // namespace weft
