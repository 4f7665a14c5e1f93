// A memory barrier run on other cores at a rare moment, so that a frequent path on those cores
// needs none (Linux membarrier, "global expedited"): the heavy half of an asymmetric Dekker
// handshake.
//
// The frequent side stores A, then (with only a compiler barrier between) loads B. The rare
// side stores B, calls remote_barrier(), then loads A. One of the two loads sees the other
// side's store, as if both had used a full fence: the kernel makes every core that runs a
// registered process execute a full barrier before remote_barrier() returns (a core that
// switches processes executes one anyway). Only processes that registered are covered.
#pragma once

namespace weft::util {

// Registers this process (once; later calls return the first answer): its threads then take
// part in every remote_barrier() of any process. False when the kernel does not offer it (too
// old, or a seccomp filter forbids it).
bool enable_remote_barriers();

// Runs a full memory barrier on every core that runs a registered process, and on this one.
// Costs a system call and an interrupt per such core: for rare paths only. False on failure:
// then no ordering was given.
bool remote_barrier();

}  // namespace weft::util
