// Starting a job the way torch.distributed.init_process_group does.
//
// Where ranks find each other, in order of precedence:
//   1. options.store: an existing Store (tests, embedding applications);
//   2. options.init_method: "env://" (the default), "tcp://host:port" or "file:///path";
// and for env:// the variables RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, or, where they are
// unset, those of the launcher that started the process: srun, Open MPI's mpirun, MPICH's
// mpiexec (docs/launching.md). With tcp:// and env://, rank 0 serves the store
// unless the launcher already does: weftrun's store is at WEFT_STORE_ADDR, and under torchrun
// (TORCHELASTIC_USE_AGENT_STORE=True) the ranks use torchrun's agent store on
// MASTER_ADDR:MASTER_PORT, speaking torch's store protocol. One timeout bounds the whole
// rendezvous; a rank that never arrives is named in the timeout error.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "weft/export.h"
#include "weft/process_group.h"
#include "weft/store.h"

namespace weft {

struct InitOptions {
  std::string init_method;               // "" means "env://"
  int rank = -1;                         // -1: from the environment
  int world_size = -1;                   // -1: from the environment
  std::shared_ptr<Store> store;          // rendezvous through this store instead of init_method
  std::chrono::milliseconds timeout{0};  // 0: WEFT_TIMEOUT
  std::string group_name = "default";
};

WEFT_API std::shared_ptr<ProcessGroup> init_process_group(const InitOptions& options = {});

// Where this process sits in its job, as its launcher's variables say: what env:// reads
// (docs/launching.md), for programs that want their local rank or the rendezvous address
// without reading each launcher's spellings themselves. What the environment does not say is
// -1 or empty. Throws weft::Error (invalid_argument) on malformed or contradictory values.
struct LaunchInfo {
  std::string launcher;  // "Open MPI", "MPICH (Hydra)", "Slurm", "a PMI launcher", or "the
                         // environment" (torch's variables: torchrun, weftrun, by hand)
  int rank = -1;
  int world_size = -1;
  int local_rank = -1;        // among the job's ranks on this node
  int local_world_size = -1;  // the job's ranks on this node
  std::string master_addr;
  int master_port = -1;
};

WEFT_API LaunchInfo launch_info();

}  // namespace weft
