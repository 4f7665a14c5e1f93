// binomial_scatter — the root's input is the concatenation in rank order of p blocks, rank r's
// block byte_counts[r] bytes long (uneven and zero counts allowed); every rank receives its
// block into `output`, along a binomial tree (patterns/binomial_tree.h).
//
// Phases (one step, step 0, per tree edge): the root sends each child that child's subtree
// range, largest subtree first, straight from `input` (the at most one range that wraps past
// rank p - 1 is packed into scratch first). An inner rank receives its subtree's range into
// scratch, keeps its own block and forwards each child's range; a leaf receives its block
// straight into `output`. Empty ranges send nothing.
//
// Cost: ceil(log2 p) alpha + ((p-1)/p) n beta at the root (n = sum of byte_counts): the root
// sends n - byte_counts[root] bytes; an inner rank receives its subtree's bytes (at most n/2)
// and forwards them less its own.
//
// byte_counts has p entries, the same on every rank (weft::Error kInternal otherwise).
// `input` is read only on the root (it may be null elsewhere); `output` holds
// byte_counts[rank] bytes. Runs on the calling thread.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "coll/collective_call.h"

namespace weft::coll {

void binomial_scatter(CollectiveCall& call, const void* input, void* output,
                      std::span<const std::size_t> byte_counts, int root);

}  // namespace weft::coll
