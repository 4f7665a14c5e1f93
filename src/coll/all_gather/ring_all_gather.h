// ring_all_gather — every rank ends with the concatenation, in rank order, of every rank's
// input: output = input(0) ++ input(1) ++ ... ++ input(p-1), rank r contributing
// byte_counts[r] bytes (uneven and zero counts allowed).
//
// Phases: copy my input into my block of `output` (skipped when `input` already is that block:
// the in-place all_gather_into_tensor); then p - 1 steps: at step k (k = 0 .. p-2) send block
// (rank - k) mod p to rank + 1 and receive block (rank - k - 1) mod p from rank - 1, straight
// into `output`. Zero-length blocks are skipped on both sides (both know byte_counts).
//
// Cost: (p-1) alpha + ((p-1)/p) n beta for n = sum of byte_counts with equal counts; in general
// every rank receives n - byte_counts[rank] bytes and sends n - byte_counts[rank + 1] bytes.
// Bandwidth-optimal; latency linear in p (bruck_all_gather for small messages).
//
// byte_counts has p entries, the same on every rank (weft::Error kInternal otherwise).
// `input` holds byte_counts[rank] bytes; it may alias output + (sum of byte_counts below rank)
// exactly, but must not overlap `output` anywhere else. Runs on the calling thread.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "coll/collective_call.h"

namespace weft::coll {

void ring_all_gather(CollectiveCall& call, const void* input, void* output,
                     std::span<const std::size_t> byte_counts);

}  // namespace weft::coll
