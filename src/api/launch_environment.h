// Where this process sits in its job, as its launcher told it through the environment: rank,
// world size, local rank and local world size (the ranks on this node), and the rendezvous
// address (MASTER_ADDR, MASTER_PORT). torch.distributed's variables come first; without them
// the launcher's own spellings are read, so that programs started by Slurm's srun, Open MPI's
// mpirun or MPICH's mpiexec need no weft variable (docs/launching.md lists every variable and
// its order):
//
//   rank              RANK; OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID
//   world size        WORLD_SIZE; OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_STEP_NUM_TASKS,
//                     SLURM_NTASKS
//   local rank        LOCAL_RANK; the launcher's OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID
//                     (Hydra) or SLURM_LOCALID
//   local world size  LOCAL_WORLD_SIZE; the launcher's OMPI_COMM_WORLD_LOCAL_SIZE,
//                     MPI_LOCALNRANKS or SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE)
//                     at SLURM_NODEID
//   MASTER_ADDR       MASTER_ADDR; Slurm: the first host of SLURM_STEP_NODELIST (else
//                     SLURM_NODELIST, SLURM_JOB_NODELIST); Open MPI, Hydra: 127.0.0.1 when
//                     every rank runs on this node
//   MASTER_PORT       MASTER_PORT; derived from SLURM_JOB_ID and SLURM_STEP_ID, Open MPI's job
//                     id, or (one node) the pid of Hydra's proxy (port_of_job below)
//
// Which launcher started the process is told by which variables exist, never by their values,
// so every rank of a job decides alike. Malformed values, and values that contradict each other
// (a local rank outside the local world, task counts that do not add up to the world size),
// throw weft::Error(kInvalidArgument) naming the variables. An address or port that cannot be
// derived is not an error here (the caller may not need one: tcp://, file://, a store): the
// advice fields say what to set, for the caller to raise when it does need them.
//
// NOTE(local-rank): weft itself never uses the local rank or size (same-host peers are found by
// host identity, util/host_identity.h); they are read for programs and front ends, and to tell
// that an MPI job runs on one node.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace weft::api {

enum class Launcher {
  kUnknown,  // none of the launchers below: torch's variables (torchrun, weftrun) or nothing
  kOpenMpi,  // OMPI_COMM_WORLD_RANK is set (mpirun, mpiexec of Open MPI)
  kHydra,    // PMI_RANK and MPI_LOCALRANKID are set (mpiexec of MPICH, Intel MPI)
  kSlurm,    // SLURM_PROCID is set (srun), and no MPI launcher's variables
  kPmi,      // PMI_RANK without Hydra's or Slurm's variables: rank and size only
};

const char* to_string(Launcher launcher);

struct LaunchEnvironment {
  Launcher launcher = Launcher::kUnknown;
  std::optional<int> rank;
  std::optional<int> world_size;
  std::optional<int> local_rank;        // rank among the job's ranks on this node
  std::optional<int> local_world_size;  // the job's ranks on this node
  std::optional<std::string> master_addr;
  std::optional<int> master_port;
  // How MASTER_ADDR / MASTER_PORT were derived when they were not set, for logs and errors
  // (e.g. "first host of SLURM_STEP_NODELIST"); empty when they were set.
  std::string master_addr_origin;
  std::string master_port_origin;
  // When MASTER_ADDR / MASTER_PORT are unset and cannot be derived: a whole error message
  // saying what to set for this launcher; empty when nothing better than "set it" can be said.
  std::string master_addr_advice;
  std::string master_port_advice;
  std::optional<std::string> store_addr;  // WEFT_STORE_ADDR: the launcher serves the store
  // torchrun's agent serves torch's store on MASTER_ADDR:MASTER_PORT
  // (TORCHELASTIC_USE_AGENT_STORE); the job's keys go under this prefix, one per run and restart.
  std::optional<std::string> torch_agent_store_prefix;
};

// What read_launch_environment looks at, replaceable in tests.
struct LaunchProbes {
  // The value of an environment variable; nullopt when unset or empty.
  std::function<std::optional<std::string>(const char* name)> variable;
  // The pid of the hydra_pmi_proxy this process descends from (MPICH's per-node proxy), or
  // nullopt. Shared by every rank of a job on one node, it stands in for the job id Hydra does
  // not export.
  std::function<std::optional<int64_t>()> hydra_proxy_pid;
};

// The process's own environment and /proc; WEFT_STORE_ADDR through the settings table.
LaunchEnvironment read_launch_environment();
// Everything but WEFT_STORE_ADDR, from `probes`.
LaunchEnvironment read_launch_environment(const LaunchProbes& probes);

// The port derived for a job whose launcher gives a numeric job and step id (Slurm):
// 20000 + (job * 64 + step % 64) % 12288, in 20000..32287, below Linux's ephemeral ports
// (32768..60999) so that no outgoing connection holds it; steps 0..63 of 192 consecutive jobs
// never share a port.
int port_of_job(uint64_t job, uint64_t step);
// The port derived from a job id that is text (Open MPI's job id, Hydra's proxy pid):
// 20000 + FNV-1a-64(text) % 12288.
int port_of_job_text(const std::string& text);

}  // namespace weft::api
