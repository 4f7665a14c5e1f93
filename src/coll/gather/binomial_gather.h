// binomial_gather — the root receives every rank's input, concatenated in rank order:
// output = input(0) ++ ... ++ input(p-1), rank r contributing byte_counts[r] bytes (uneven and
// zero counts allowed), along a binomial tree (patterns/binomial_tree.h).
//
// Phases (one step, step 0, per tree edge): every rank gathers its subtree's blocks in
// relative-rank order: it receives each child's subtree range at once (all receives posted
// before waiting), then sends the whole range to its parent. A leaf sends its input directly;
// an inner rank assembles its range in a scratch buffer. The root receives each child's range
// straight into `output`, except the (at most one) range that wraps past rank p - 1, which
// it receives into scratch and copies out in two pieces. Empty ranges send nothing.
//
// Cost: ceil(log2 p) alpha + ((p-1)/p) n beta at the root (n = sum of byte_counts): the root
// receives n - byte_counts[root] bytes; an inner rank sends its subtree's bytes (at most n/2)
// once and receives them less its own. Latency-optimal for small messages; a linear gather
// would cost (p-1) alpha for the same bytes.
//
// byte_counts has p entries, the same on every rank (weft::Error kInternal otherwise).
// `output` is written only on the root (it may be null elsewhere). Runs on the calling thread.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "coll/collective_call.h"

namespace weft::coll {

void binomial_gather(CollectiveCall& call, const void* input, void* output,
                     std::span<const std::size_t> byte_counts, int root);

}  // namespace weft::coll
