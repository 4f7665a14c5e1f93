// bruck_all_gather — all-gather with equal counts in ceil(log2 p) rounds (Bruck et al.):
// output = input(0) ++ ... ++ input(p-1), every rank contributing byte_counts[r] = m bytes.
//
// Phases (patterns/bruck.h): my input goes to slot 0 of a p-slot working buffer whose slot i
// will hold rank (rank + i) % p's block. Round k (step k, distance d = 2^k) sends slots
// [0, min(d, p-d)) to rank - d and receives as many slots at d from rank + d. A final local
// rotation copies slot i to output block (rank + i) % p. Rank 0's slots are already in output
// order, so it works in `output` directly; other ranks use a p m byte scratch buffer and pay
// one extra local copy of p m bytes.
//
// Cost: ceil(log2 p) alpha + ((p-1)/p) n beta, n = p m: every rank receives and sends (p-1) m
// bytes. The latency-optimal all-gather for small messages, for any p (the last round is
// partial when p is not a power of two).
//
// byte_counts has p entries, all equal and the same on every rank (weft::Error kInternal
// otherwise: use ring_all_gather for uneven counts). `input` may alias output + rank m exactly.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "coll/collective_call.h"

namespace weft::coll {

void bruck_all_gather(CollectiveCall& call, const void* input, void* output,
                      std::span<const std::size_t> byte_counts);

}  // namespace weft::coll
