// scatter_allgather_broadcast — van de Geijn's broadcast for large messages: the root scatters
// p blocks along a binomial tree, then a ring all-gather of the blocks completes `data`
// everywhere.
//
// Blocks are indexed by relative rank v = (rank - root + p) % p: block v holds bytes
// [v q + min(v, r), ...) with q = bytes / p, r = bytes % p (the first r blocks one byte
// longer), so each binomial subtree's blocks are one contiguous range of `data`.
// Phase 1 (step 0): a non-root rank receives its subtree's blocks from its parent; every rank
// sends each child that child's subtree range, largest subtree first.
// Phase 2 (steps 1 .. p-1): ring over relative ranks: at step k+1 rank v sends block
// (v - k) mod p to v + 1 and receives block (v - k - 1) mod p from v - 1, in place in `data`.
// Zero-length blocks (bytes < p) are skipped on both sides, which compute the same lengths.
//
// Cost: (ceil(log2 p) + p - 1) alpha + 2 ((p-1)/p) n beta: the scatter moves at most
// ((p-1)/p) n bytes out of the root (n/2 along the deepest edge), the ring ((p-1)/p) n bytes
// in and out of every rank. Beats binomial_broadcast once n beta dominates p alpha.
//
// `data` is read on the root and written everywhere else. Same contract as binomial_broadcast.
#pragma once

#include <cstddef>

#include "coll/collective_call.h"

namespace weft::coll {

void scatter_allgather_broadcast(CollectiveCall& call, void* data, std::size_t bytes, int root);

}  // namespace weft::coll
