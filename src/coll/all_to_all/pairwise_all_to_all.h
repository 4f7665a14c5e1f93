// pairwise_all_to_all — every rank sends a block to every rank: rank r's block for rank s,
// send_bytes[s] bytes at input + send_offsets[s] on r, lands at output + recv_offsets[r] on s,
// which expects recv_bytes[r] bytes (all_to_all_single with split sizes; zero sizes allowed).
//
// Phases: my own block is copied locally; then p - 1 steps of pairwise exchange: at step k
// (k = 1 .. p-1) send to (rank + k) % p and receive from (rank - k + p) % p at once, so each
// rank has one message in and one out per step and no link is oversubscribed. Empty blocks
// are skipped on both sides (send_bytes on one side must equal recv_bytes on the other).
//
// Up to 1 MiB sent per rank, all p - 1 exchanges are posted at once instead, so their
// latencies overlap (about one alpha instead of p - 1).
//
// Cost: (p-1) alpha + ((p-1)/p) n beta for n bytes sent per rank with even splits: every byte
// crosses the network once. For small blocks and large p a Bruck all-to-all (log p alpha,
// (n/2) log p beta) would win; NOTE(all_to_all): not written yet.
//
// All vectors have p entries, in bytes (weft::Error kInternal otherwise). `output` must not
// overlap `input`. Runs on the calling thread.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "coll/collective_call.h"

namespace weft::coll {

void pairwise_all_to_all(CollectiveCall& call, const void* input,
                         std::span<const std::size_t> send_bytes,
                         std::span<const std::size_t> send_offsets, void* output,
                         std::span<const std::size_t> recv_bytes,
                         std::span<const std::size_t> recv_offsets);

}  // namespace weft::coll
