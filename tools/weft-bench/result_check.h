// The check (-c 1): fill a case's inputs with DataPattern values, and after one run of the op
// count the elements of this rank's result that differ from the locally computed reference.
//
// Contract: fill_for_check writes every input this rank contributes and a sentinel byte
// (0xA5) over every output it receives, so stale data never passes. count_wrong compares
// bits exactly, prints the first mismatch of this rank to stderr (like the anchors), and
// returns the number of wrong elements. Ranks that receive nothing (a non-root of gather)
// check what the op must leave alone instead (reduce: a non-root's data is unchanged).
#pragma once

#include <cstdint>

#include "bench_case.h"
#include "data_pattern.h"

namespace weft_bench {

void fill_for_check(const BenchCase& c, CaseBuffers& buffers, const DataPattern& pattern, int rank,
                    int world_size);

uint64_t count_wrong(const BenchCase& c, CaseBuffers& buffers, const DataPattern& pattern, int rank,
                     int world_size);

}  // namespace weft_bench
