#include "api/launch_environment.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <numeric>
#include <sstream>
#include <string_view>
#include <vector>

#include "api/slurm_lists.h"
#include "util/settings.h"
#include "weft/error.h"

namespace weft::api {

namespace {

constexpr int kFirstDerivedPort = 20000;
constexpr int kDerivedPorts = 12288;  // 64 steps x 192 jobs: 20000..32287
constexpr int kStepsPerJob = 64;

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

// A value read from the environment, with the variable it came from (for messages).
struct Sourced {
  int value;
  const char* name;

  std::string shown() const { return std::string(name) + "=" + std::to_string(value); }
};

class EnvironmentReader {
 public:
  explicit EnvironmentReader(const LaunchProbes& probes) : probes_(probes) {}

  std::optional<std::string> text(const char* name) const {
    auto value = probes_.variable(name);
    if (value && value->empty()) return std::nullopt;
    return value;
  }
  bool has(const char* name) const { return text(name).has_value(); }

  // A count or index: a non-negative integer up to 2^30.
  std::optional<Sourced> integer(const char* name) const {
    auto value = number(name, 1 << 30, "a non-negative integer");
    if (!value) return std::nullopt;
    return Sourced{static_cast<int>(*value), name};
  }
  // A job or step id: any non-negative 64-bit integer.
  std::optional<uint64_t> id(const char* name) const {
    return number(name, UINT64_MAX, "a non-negative integer id");
  }
  std::optional<Sourced> first_integer(std::initializer_list<const char*> names) const {
    for (const char* name : names) {
      if (auto value = integer(name)) return value;
    }
    return std::nullopt;
  }
  const char* first_set(std::initializer_list<const char*> names) const {
    for (const char* name : names) {
      if (has(name)) return name;
    }
    return nullptr;
  }

  std::optional<int64_t> hydra_proxy_pid() const {
    return probes_.hydra_proxy_pid ? probes_.hydra_proxy_pid() : std::nullopt;
  }

 private:
  std::optional<uint64_t> number(const char* name, uint64_t max, const char* expected) const {
    auto value = text(name);
    if (!value) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    unsigned long long parsed = std::strtoull(value->c_str(), &end, 10);
    if ((*value)[0] < '0' || (*value)[0] > '9' || *end != '\0' || errno != 0 || parsed > max) {
      invalid(std::string(name) + "='" + *value + "' is malformed: expected " + expected);
    }
    return static_cast<uint64_t>(parsed);
  }

  const LaunchProbes& probes_;
};

// Told by which variables exist, so that every rank of a job decides alike. Open MPI's and
// Hydra's variables win over Slurm's: mpirun and mpiexec run inside Slurm allocations, whose
// variables their ranks inherit (SLURM_PROCID=0 for every one of them).
Launcher detect_launcher(const EnvironmentReader& env) {
  if (env.has("OMPI_COMM_WORLD_RANK")) return Launcher::kOpenMpi;
  if (env.has("PMI_RANK") && env.has("MPI_LOCALRANKID")) return Launcher::kHydra;
  if (env.has("SLURM_PROCID")) return Launcher::kSlurm;  // srun; with --mpi=pmi2 PMI_RANK too
  if (env.has("PMI_RANK")) return Launcher::kPmi;
  return Launcher::kUnknown;
}

// The task count of this node, from Slurm's per-node list. The step's list is the one srun's
// tasks belong to (a step may run on part of the job's nodes); the job's when there is none.
std::optional<Sourced> slurm_tasks_on_this_node(const EnvironmentReader& env,
                                                const std::optional<Sourced>& world_size) {
  const char* name = env.first_set({"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"});
  if (!name) return std::nullopt;
  std::vector<int> counts = expand_slurm_tasks_per_node(*env.text(name), name);
  std::string shown = std::string(name) + "='" + *env.text(name) + "'";
  // The list and the task count describe the same step (or the same job): they must agree.
  const char* paired =
      name == std::string("SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
  if (world_size && world_size->name == std::string(paired)) {
    int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
    if (total != world_size->value) {
      invalid(shown + " adds up to " + std::to_string(total) + " tasks, but " +
              world_size->shown() + ": the two disagree");
    }
  }
  auto node = env.integer("SLURM_NODEID");
  if (!node) {
    // Without the node index, only a list where every node runs as many tasks tells.
    bool uniform =
        std::adjacent_find(counts.begin(), counts.end(), std::not_equal_to<>()) == counts.end();
    if (!uniform) return std::nullopt;
    return Sourced{counts.front(), name};
  }
  if (static_cast<std::size_t>(node->value) >= counts.size()) {
    invalid(node->shown() + " is past the " + std::to_string(counts.size()) + " nodes of " + shown);
  }
  return Sourced{counts[node->value], name};
}

std::optional<Sourced> launcher_local_rank(const EnvironmentReader& env, Launcher launcher) {
  switch (launcher) {
    case Launcher::kOpenMpi:
      return env.integer("OMPI_COMM_WORLD_LOCAL_RANK");
    case Launcher::kHydra:
      return env.integer("MPI_LOCALRANKID");
    case Launcher::kSlurm:
      return env.integer("SLURM_LOCALID");
    default:
      return std::nullopt;
  }
}

std::optional<Sourced> launcher_local_size(const EnvironmentReader& env, Launcher launcher,
                                           const std::optional<Sourced>& world_size) {
  switch (launcher) {
    case Launcher::kOpenMpi:
      return env.integer("OMPI_COMM_WORLD_LOCAL_SIZE");
    case Launcher::kHydra:
      return env.integer("MPI_LOCALNRANKS");
    case Launcher::kSlurm:
      return slurm_tasks_on_this_node(env, world_size);
    default:
      return std::nullopt;
  }
}

// Under srun --mpi=pmi2 (or pmix) both PMI_RANK and SLURM_PROCID are set, to the same value. If
// they differ, some other PMI launcher runs inside a Slurm allocation and the Slurm variables
// describe the allocation, not this process: deriving anything from them would be wrong.
void check_pmi_matches_slurm(const EnvironmentReader& env, const std::optional<Sourced>& pmi,
                             std::initializer_list<const char*> slurm_names) {
  if (!pmi || std::string_view(pmi->name).substr(0, 4) != "PMI_") return;
  auto slurm = env.first_integer(slurm_names);
  if (slurm && slurm->value != pmi->value) {
    invalid(pmi->shown() + " but " + slurm->shown() +
            ": these ranks were not started by srun, but inherit a Slurm allocation's "
            "variables; set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT, or start them with "
            "srun");
  }
}

std::string single_node_reason(const std::optional<Sourced>& local_size,
                               const std::optional<Sourced>& world_size) {
  return "every rank runs on this node: " + local_size->shown() + ", " + world_size->shown();
}

void derive_master_addr(const EnvironmentReader& env, Launcher launcher,
                        const std::optional<Sourced>& rank,
                        const std::optional<Sourced>& local_size,
                        const std::optional<Sourced>& world_size, LaunchEnvironment& out) {
  const std::string needs = "env:// needs MASTER_ADDR (the host of rank 0): ";
  switch (launcher) {
    case Launcher::kSlurm: {
      const char* name =
          env.first_set({"SLURM_STEP_NODELIST", "SLURM_NODELIST", "SLURM_JOB_NODELIST"});
      if (!name) {
        out.master_addr_advice =
            needs +
            "Slurm set none of SLURM_STEP_NODELIST, SLURM_NODELIST, SLURM_JOB_NODELIST; "
            "export MASTER_ADDR=<host of rank 0>";
        return;
      }
      std::vector<std::string> hosts = expand_slurm_hostlist(*env.text(name), name);
      // srun places task 0 on the step's first node (block and cyclic distributions); a rank 0
      // elsewhere (-m arbitrary, a hostfile) would serve the store where nobody looks for it.
      auto node_name = env.text("SLURMD_NODENAME");
      if (rank && rank->value == 0 && node_name && *node_name != hosts.front()) {
        out.master_addr_advice = needs + "rank 0 runs on SLURMD_NODENAME=" + *node_name +
                                 ", not on " + hosts.front() + ", the first host of " + name +
                                 " (a task distribution that does not start on the first "
                                 "node?); export MASTER_ADDR=<host of rank 0>";
        return;
      }
      out.master_addr = hosts.front();
      out.master_addr_origin = std::string("first host of ") + name;
      return;
    }
    case Launcher::kOpenMpi:
    case Launcher::kHydra: {
      bool open_mpi = launcher == Launcher::kOpenMpi;
      if (local_size && world_size && local_size->value == world_size->value) {
        out.master_addr = "127.0.0.1";
        out.master_addr_origin = single_node_reason(local_size, world_size);
        return;
      }
      std::string where = local_size && world_size
                              ? "runs these ranks on several nodes (" + local_size->shown() + ", " +
                                    world_size->shown() + ")"
                              : "does not say whether these ranks share one node";
      out.master_addr_advice =
          needs + (open_mpi ? "Open MPI's mpirun " : "MPICH's mpiexec ") + where +
          ", and only the host of rank 0 (the first host ranks are placed on) can serve the "
          "rendezvous: pass it to every rank, " +
          (open_mpi ? "mpirun -x MASTER_ADDR=<first host> ..."
                    : "mpiexec -genv MASTER_ADDR <first host> ...");
      return;
    }
    case Launcher::kPmi:
      out.master_addr_advice = needs +
                               "PMI_RANK is set, but weft knows no way to find rank 0's host "
                               "from this launcher's variables; set MASTER_ADDR";
      return;
    case Launcher::kUnknown:
      return;
  }
}

void derive_master_port(const EnvironmentReader& env, Launcher launcher,
                        const std::optional<Sourced>& local_size,
                        const std::optional<Sourced>& world_size, LaunchEnvironment& out) {
  const std::string needs = "env:// needs MASTER_PORT (a free port on rank 0's host): ";
  switch (launcher) {
    case Launcher::kSlurm: {
      const char* job_name = env.first_set({"SLURM_JOB_ID", "SLURM_JOBID"});
      if (!job_name) {
        out.master_port_advice =
            needs + "Slurm set no SLURM_JOB_ID to derive one from; export MASTER_PORT=<port>";
        return;
      }
      uint64_t job = *env.id(job_name);
      // Two steps of one job may run at once (srun ... & srun ...): the step id tells them apart.
      // Outside a step (the batch script itself) there is none: step 0.
      const char* step_name = env.first_set({"SLURM_STEP_ID", "SLURM_STEPID"});
      uint64_t step = step_name ? *env.id(step_name) : 0;
      out.master_port = port_of_job(job, step);
      out.master_port_origin =
          std::string("from ") + job_name + "=" + std::to_string(job) +
          (step_name ? std::string(" and ") + step_name + "=" + std::to_string(step)
                     : std::string(" (no step id: step 0)"));
      return;
    }
    case Launcher::kOpenMpi: {
      // Open MPI 4 exports its job id as an MCA parameter (ess_base_jobid; orte_ess_jobid in
      // older releases); Open MPI 5 names the job by its PMIx namespace.
      const char* name =
          env.first_set({"OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid", "PMIX_NAMESPACE"});
      if (!name) {
        out.master_port_advice = needs +
                                 "Open MPI exported no job id to derive one from; pass one to "
                                 "every rank, mpirun -x MASTER_PORT=<port> ...";
        return;
      }
      out.master_port = port_of_job_text(*env.text(name));
      out.master_port_origin = std::string("from the job id ") + name + "=" + *env.text(name);
      return;
    }
    case Launcher::kHydra: {
      // Hydra exports no job id. On one node every rank descends from the same
      // hydra_pmi_proxy, whose pid stands in for one; on several, each node has its own.
      bool one_node = local_size && world_size && local_size->value == world_size->value;
      auto proxy = one_node ? env.hydra_proxy_pid() : std::nullopt;
      if (!proxy) {
        out.master_port_advice =
            needs + "MPICH's mpiexec exports no job id to derive one from" +
            (one_node ? " and no hydra_pmi_proxy was found among this process's ancestors"
                      : " on several nodes") +
            "; pass one to every rank, mpiexec -genv MASTER_PORT <port> ...";
        return;
      }
      out.master_port = port_of_job_text("hydra_pmi_proxy:" + std::to_string(*proxy));
      out.master_port_origin = "from the pid " + std::to_string(*proxy) + " of hydra_pmi_proxy";
      return;
    }
    case Launcher::kPmi:
      out.master_port_advice = needs +
                               "PMI_RANK is set, but weft knows no job id of this launcher to "
                               "derive one from; set MASTER_PORT";
      return;
    case Launcher::kUnknown:
      return;
  }
}

std::optional<std::string> process_environment(const char* name) {
  const char* value = std::getenv(name);
  if (!value) return std::nullopt;
  return std::string(value);
}

// The parent of `pid` and its command name, from /proc/<pid>/stat: "pid (comm) state ppid ...".
// The name may hold spaces and parentheses: it ends at the last ')'.
bool parent_and_name(int64_t pid, int64_t& parent, std::string& name) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::size_t open = stat.find('(');
  std::size_t close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  name = stat.substr(open + 1, close - open - 1);
  std::istringstream rest(stat.substr(close + 1));
  std::string state;
  return static_cast<bool>(rest >> state >> parent);
}

std::optional<int64_t> find_hydra_proxy_pid() {
  int64_t pid = getppid();
  for (int depth = 0; depth < 16 && pid > 1; ++depth) {  // a wrapper script or two, not more
    int64_t parent = 0;
    std::string name;
    if (!parent_and_name(pid, parent, name)) return std::nullopt;
    if (name == "hydra_pmi_proxy") return pid;
    pid = parent;
  }
  return std::nullopt;
}

}  // namespace

const char* to_string(Launcher launcher) {
  switch (launcher) {
    case Launcher::kOpenMpi:
      return "Open MPI";
    case Launcher::kHydra:
      return "MPICH (Hydra)";
    case Launcher::kSlurm:
      return "Slurm";
    case Launcher::kPmi:
      return "a PMI launcher";
    case Launcher::kUnknown:
      break;
  }
  return "the environment";
}

int port_of_job(uint64_t job, uint64_t step) {
  uint64_t key = (job % kDerivedPorts) * kStepsPerJob + step % kStepsPerJob;
  return kFirstDerivedPort + static_cast<int>(key % kDerivedPorts);
}

int port_of_job_text(const std::string& text) {
  uint64_t hash = 14695981039346656037ull;  // FNV-1a, 64 bits
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return kFirstDerivedPort + static_cast<int>(hash % kDerivedPorts);
}

LaunchEnvironment read_launch_environment(const LaunchProbes& probes) {
  EnvironmentReader env(probes);
  LaunchEnvironment environment;
  Launcher launcher = detect_launcher(env);
  environment.launcher = launcher;

  auto rank = env.first_integer({"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"});
  auto world_size = env.first_integer(
      {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"});
  if (launcher == Launcher::kSlurm) {
    check_pmi_matches_slurm(env, rank, {"SLURM_PROCID"});
    check_pmi_matches_slurm(env, world_size, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"});
  }
  if (rank && world_size && rank->value >= world_size->value) {
    invalid(rank->shown() + " is not below " + world_size->shown() + ": the two disagree");
  }

  auto local_rank = env.integer("LOCAL_RANK");
  if (!local_rank) local_rank = launcher_local_rank(env, launcher);
  auto local_size = env.integer("LOCAL_WORLD_SIZE");
  if (!local_size) local_size = launcher_local_size(env, launcher, world_size);
  if (local_rank && local_size && local_rank->value >= local_size->value) {
    invalid(local_rank->shown() + " is not below " + local_size->shown() + ": the two disagree");
  }
  if (local_size && world_size && local_size->value > world_size->value) {
    invalid(local_size->shown() + " is more than " + world_size->shown() + ": the two disagree");
  }
  if (local_size && local_size->value == 0) {
    invalid(local_size->shown() + ": this node runs no rank, yet this process runs on it");
  }

  if (rank) environment.rank = rank->value;
  if (world_size) environment.world_size = world_size->value;
  if (local_rank) environment.local_rank = local_rank->value;
  if (local_size) environment.local_world_size = local_size->value;

  environment.master_addr = env.text("MASTER_ADDR");
  if (!environment.master_addr) {
    derive_master_addr(env, launcher, rank, local_size, world_size, environment);
  }
  if (auto port = env.integer("MASTER_PORT")) {
    if (port->value < 1 || port->value > 65535) {
      invalid(port->shown() + " is malformed: expected a port, 1 to 65535");
    }
    environment.master_port = port->value;
  } else {
    derive_master_port(env, launcher, local_size, world_size, environment);
  }

  auto agent_store = env.text("TORCHELASTIC_USE_AGENT_STORE");
  if (agent_store && (*agent_store == "True" || *agent_store == "true" || *agent_store == "1")) {
    // The agent's store outlives a restart of the workers: each attempt rendezvouses afresh.
    environment.torch_agent_store_prefix = "weft/" +
                                           env.text("TORCHELASTIC_RUN_ID").value_or("run") + "/" +
                                           env.text("TORCHELASTIC_RESTART_COUNT").value_or("0");
  }
  return environment;
}

LaunchEnvironment read_launch_environment() {
  LaunchEnvironment environment =
      read_launch_environment(LaunchProbes{process_environment, find_hydra_proxy_pid});
  std::string store_addr = util::setting_string("WEFT_STORE_ADDR");
  if (!store_addr.empty()) environment.store_addr = store_addr;
  return environment;
}

}  // namespace weft::api
