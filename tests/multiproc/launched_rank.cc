// One rank of a job started by a launcher without any weft or torch variable: Open MPI's mpirun,
// MPICH's mpiexec, or tests/multiproc/launchers_test.cc's simulated srun. It joins with
// init_process_group() from the launcher's variables, runs an all_reduce whose sum every rank
// predicts, and prints one line:
//   LAUNCHED rank=R size=N local_rank=L local_size=S rendezvous=ADDR:PORT sum=ok launcher=NAME
// Usage: weft_test_launched_rank TIMEOUT_SECONDS (bounds the rendezvous and the all_reduce).
// Exits 0 when the sum is right, 1 when it is wrong, 2 on an error (printed as "ERROR ...").
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "api/launch_environment.h"
#include "weft/weft.h"

namespace {

std::string shown(const std::optional<int>& value) {
  return value ? std::to_string(*value) : std::string("none");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s TIMEOUT_SECONDS\n", argv[0]);
    return 2;
  }
  try {
    weft::api::LaunchEnvironment launch = weft::api::read_launch_environment();
    weft::InitOptions options;
    options.timeout = std::chrono::seconds(std::atoi(argv[1]));
    auto group = weft::init_process_group(options);
    const int64_t n = group->size();
    std::vector<int64_t> values(1000);
    for (std::size_t i = 0; i < values.size(); ++i) {
      values[i] = (group->rank() + 1) * static_cast<int64_t>(i + 1);
    }
    group->all_reduce(values, weft::ReduceOp::kSum);
    bool right = true;
    for (std::size_t i = 0; i < values.size(); ++i) {
      right = right && values[i] == n * (n + 1) / 2 * static_cast<int64_t>(i + 1);
    }
    std::printf(
        "LAUNCHED rank=%d size=%d local_rank=%s local_size=%s rendezvous=%s:%s sum=%s "
        "launcher=%s\n",
        group->rank(), group->size(), shown(launch.local_rank).c_str(),
        shown(launch.local_world_size).c_str(), launch.master_addr.value_or("none").c_str(),
        shown(launch.master_port).c_str(), right ? "ok" : "wrong",
        weft::api::to_string(launch.launcher));
    std::fflush(stdout);
    return right ? 0 : 1;
  } catch (const weft::Error& error) {
    std::printf("ERROR %s\n", error.what());
    std::fflush(stdout);
    return 2;
  }
}
