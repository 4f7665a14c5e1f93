// dissemination_barrier — no rank returns before every rank has entered (Hensgen, Finkel and
// Manber's dissemination barrier).
//
// Phases: ceil(log2 p) rounds; in round k (step k) send a zero-byte message to
// (rank + 2^k) % p and receive one from (rank - 2^k + p) % p. After round k a rank has heard,
// directly or transitively, from the 2^(k+1) - 1 ranks before it, so after the last round from
// all of them. Works for any p (no power-of-two folding needed).
//
// Cost: ceil(log2 p) alpha, no payload. Runs on the calling thread; throws weft::Error.
#pragma once

#include "coll/collective_call.h"

namespace weft::coll {

void dissemination_barrier(CollectiveCall& call);

}  // namespace weft::coll
