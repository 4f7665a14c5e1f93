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
};

LaunchEnvironment read_launch_environment();

}  // namespace weft::api
