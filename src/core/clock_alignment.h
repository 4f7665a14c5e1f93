// Clock alignment for the timeline: how far this rank's steady clock is from rank 0's, found
// through the job's store, so that weftrun can merge the ranks' traces on one time axis (ranks
// of one host share the steady clock and find ~0; hosts differ by their boot times).
#pragma once

#include <cstdint>
#include <vector>

#include "weft/store.h"

namespace weft::core {

// Every rank of the world calls it at once. Ranks on rank 0's host (shares_clock_with_rank0)
// read the same steady clock (CLOCK_MONOTONIC is per machine): 0, exactly, without a word.
// Each other rank plays a few ping-pongs with rank 0 (rank 0 answers each ping with its
// clock); the one with the shortest round trip gives offset = rank 0's clock - the midpoint of
// the round trip, good to about half a store round trip. Returns the nanoseconds to add to
// this rank's steady clock to read rank 0's. Throws what the store throws.
int64_t estimate_clock_offset_ns(Store& store, int rank, int size,
                                 const std::vector<bool>& shares_clock_with_rank0);

}  // namespace weft::core
