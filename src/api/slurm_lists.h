// Slurm's two compressed list formats, as srun and sbatch export them:
//
//   host lists (SLURM_STEP_NODELIST, SLURM_JOB_NODELIST, SLURM_NODELIST):
//     "node[01-03,07],gpu-a[1-2],login5" -> node01 node02 node03 node07 gpu-a1 gpu-a2 login5
//     A comma list of host expressions; in an expression, each bracket group holds a comma list
//     of numbers and ranges "lo-hi", padded with zeros to the width of lo as written ("[08-10]"
//     gives 08 09 10, "[8-10]" gives 8 9 10). Several groups in one expression
//     ("rack[1-2]-n[1-2]") expand to every combination, the leftmost varying slowest.
//   task counts per node (SLURM_STEP_TASKS_PER_NODE, SLURM_TASKS_PER_NODE):
//     "2(x3),1" -> 2 2 2 1: a comma list of counts, "N(xM)" standing for M nodes of N tasks.
//
// Both are pure functions of their text. Bad syntax (an unbalanced bracket, an empty host or
// range, a range running backwards, a character no host name has) throws
// weft::Error(kInvalidArgument) naming `variable` and quoting its value. A list expanding past
// kMaxSlurmListEntries entries is refused the same way rather than allocated.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace weft::api {

inline constexpr std::size_t kMaxSlurmListEntries = std::size_t{1} << 20;

// Every host of a Slurm host list, in order.
std::vector<std::string> expand_slurm_hostlist(std::string_view list, std::string_view variable);

// The task count of every node, in node order (SLURM_NODEID indexes it).
std::vector<int> expand_slurm_tasks_per_node(std::string_view list, std::string_view variable);

}  // namespace weft::api
