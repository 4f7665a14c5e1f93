// The bootstrap variables of torch.distributed (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
// LOCAL_RANK, LOCAL_WORLD_SIZE), with Open MPI's and Slurm's rank variables as fallbacks.
// A malformed value is an error naming the variable.
#pragma once

#include <optional>
#include <string>

namespace weft::api {

struct LaunchEnvironment {
  std::optional<int> rank;
  std::optional<int> world_size;
  std::optional<std::string> master_addr;
  std::optional<int> master_port;
  std::optional<std::string> store_addr;  // WEFT_STORE_ADDR: the launcher serves the store
  // torchrun's agent serves torch's store on MASTER_ADDR:MASTER_PORT
  // (TORCHELASTIC_USE_AGENT_STORE); the job's keys go under this prefix, one per run and restart.
  std::optional<std::string> torch_agent_store_prefix;
};

LaunchEnvironment read_launch_environment();

}  // namespace weft::api
