#include "core_binding.h"

#include "launch_options.h"

namespace weft::run {

BindPolicy parse_bind_policy(const std::string& text) {
  if (text == "spread") return BindPolicy::kSpread;
  if (text == "none") return BindPolicy::kNone;
  throw UsageError("--bind must be spread or none, not '" + text + "'");
}

std::vector<std::optional<cpu_set_t>> bind_slices(BindPolicy policy, int local_ranks,
                                                  const std::vector<int>& available) {
  std::vector<std::optional<cpu_set_t>> slices(local_ranks);
  if (policy == BindPolicy::kNone || local_ranks <= 0) return slices;
  const std::size_t per_rank = available.size() / static_cast<std::size_t>(local_ranks);
  if (per_rank == 0) return slices;
  for (int rank = 0; rank < local_ranks; ++rank) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (std::size_t i = 0; i < per_rank; ++i) CPU_SET(available[rank * per_rank + i], &set);
    slices[rank] = set;
  }
  return slices;
}

std::vector<int> available_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

std::string describe_cpus(const cpu_set_t& set) {
  std::string text;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    text += (text.empty() ? "" : ",") + std::to_string(cpu) +
            (last > cpu ? "-" + std::to_string(last) : "");
    cpu = last;
  }
  return text;
}

}  // namespace weft::run
