// CoreBinding — which CPUs each local rank may run on (weftrun --bind).
//
// "spread" (the default) splits the CPUs weftrun itself may use into equal, disjoint slices,
// one per local rank, in CPU order; CPUs left over by the division go unused. When ranks
// outnumber CPUs nothing is bound (slices would overlap; the scheduler balances better).
// "none" binds nothing. Why bind: two ranks that the scheduler lets share one core (it pulls
// a woken process next to its waker) stall each other at every synchronisation, while
// another core idles: same-host collectives then run several times slower, at random.
// Open MPI binds by default for the same reason; slices (not single cores) keep the intra-op
// threads of each rank (torch, OpenMP) on as many cores as the rank's share.
#pragma once

#include <sched.h>

#include <optional>
#include <string>
#include <vector>

namespace weft::run {

enum class BindPolicy { kSpread, kNone };

// Throws UsageError for anything but "spread" or "none".
BindPolicy parse_bind_policy(const std::string& text);

// Per local rank: the CPU set to bind it to, or nothing. `available` are the CPUs weftrun may
// run on, in order.
std::vector<std::optional<cpu_set_t>> bind_slices(BindPolicy policy, int local_ranks,
                                                  const std::vector<int>& available);

// The CPUs this process may run on, in order.
std::vector<int> available_cpus();

// "0-1,4" for a CPU set (for the log).
std::string describe_cpus(const cpu_set_t& set);

}  // namespace weft::run
