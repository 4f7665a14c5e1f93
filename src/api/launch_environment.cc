#include "api/launch_environment.h"

#include <cerrno>
#include <cstdlib>

#include "util/settings.h"
#include "weft/error.h"

namespace weft::api {

namespace {

std::optional<std::string> text_of(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return std::nullopt;
  return std::string(value);
}

std::optional<int> integer_of(const char* name) {
  auto text = text_of(name);
  if (!text) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text->c_str(), &end, 10);
  if (*end != '\0' || errno != 0 || value < 0 || value > (1 << 30)) {
    throw Error(ErrorCode::kInvalidArgument, std::string(name) + "='" + *text +
                                                 "' is malformed: expected a non-negative integer");
  }
  return static_cast<int>(value);
}

// The first of several launchers' spellings that is set.
std::optional<int> first_integer(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (auto value = integer_of(name)) return value;
  }
  return std::nullopt;
}

}  // namespace

LaunchEnvironment read_launch_environment() {
  LaunchEnvironment environment;
  environment.rank = first_integer({"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"});
  environment.world_size =
      first_integer({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"});
  environment.master_addr = text_of("MASTER_ADDR");
  environment.master_port = integer_of("MASTER_PORT");
  std::string store_addr = util::setting_string("WEFT_STORE_ADDR");
  if (!store_addr.empty()) environment.store_addr = store_addr;
  auto agent_store = text_of("TORCHELASTIC_USE_AGENT_STORE");
  if (agent_store && (*agent_store == "True" || *agent_store == "true" || *agent_store == "1")) {
    // The agent's store outlives a restart of the workers: each attempt rendezvouses afresh.
    environment.torch_agent_store_prefix = "weft/" +
                                           text_of("TORCHELASTIC_RUN_ID").value_or("run") + "/" +
                                           text_of("TORCHELASTIC_RESTART_COUNT").value_or("0");
  }
  return environment;
}

}  // namespace weft::api
