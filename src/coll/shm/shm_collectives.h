// Same-host collectives: the members of a group that lies on one host exchange data through
// the group's shared-memory window (transport/shm/local_window.h) instead of sockets.
//
// Every algorithm is a sequence of window rounds. In a round each member copies a piece of
// its input into its own slot, arrives, waits for the others, and then reads what it needs
// straight from the other members' slots (a copy through shared memory: one copy in, one copy
// out, no kernel, no per-message header). Slots are double-buffered, so a member can fill the
// next round's slot while the others still read the last one, and large messages stream
// through in pieces of call.round_bytes(). Every round also compares what each member runs
// (signature and sequence number), so mismatched calls fail at the first round.
//
// Costs (p members, n bytes per member, R = round_bytes, alpha = one round's synchronisation,
// about a cache-line transfer and under a microsecond when every member has a core):
// - all_reduce, small (p n <= 256 KiB): 1 round; each member reduces all p inputs itself
//   (identical order on every member, so results are bit-identical).
// - all_reduce and reduce, large: ceil(n / C) + 1 rounds with C ~ R p/(p+1); round k carries
//   input piece k and each member's reduced 1/p of piece k-1 (reduce-scatter and all-gather
//   fused and pipelined); a member writes its reduced share into its own buffer as it writes
//   it into its slot, so it copies out only the others' shares. Memory traffic per member ~
//   n read + n written of its own buffer; the slots stay in cache.
// - broadcast and reduce of at most 16 bytes: one eager round (transport/shm/local_window.h): the
//   writers (a broadcast's root, a reduce's non-roots) write their line and return; the
//   readers wait for it. A loop of them pipelines up to 256 calls deep.
// - broadcast: ceil(n / R) rounds; the root copies in, the others copy out.
// - all_gather: ceil(max block / R) rounds; each copies its block in and every other out
//   (blocks of at most 16 bytes: in the arrival lines).
// - reduce_scatter: ceil(max block / (R/p)) rounds; each member copies its p pieces in and
//   reduces its own block from all slots (at most 16 bytes in all: in the arrival lines).
// - The even forms of all_gather and reduce_scatter (every block the same size) make the same
//   rounds without size lists while they fit in the arrival lines.
// - Outputs of 8 MiB and more (broadcast, all_gather) are written with streaming stores
//   (util/stream_copy.h).
// - Every copy into my slot goes through CollectiveCall::fill_slot: ordinary or streaming
//   stores, whichever the group now finds faster for that op and pieces of that size
//   (transport/shm/slot_store_policy.h).
// - all_to_all (any split sizes): ceil(max send / (R/p)) rounds, agreed in the first round;
//   each member copies the others' p-1 pieces in and out, its own straight across (unless in
//   place). From 64 KiB pieces (512 KiB when the members outnumber the cores), when every
//   member may read the others' memory: 2 rounds, each member reads its pieces straight from
//   the senders' buffers (one copy). (all_gather does not: there the slots were faster;
//   docs/perf-history.md.) An even call (shm_even_all_to_all: contiguous blocks, and the call's
//   signature carries its count, so that all members choose alike) of at most 16 bytes in all: 1
//   round in the arrival lines, no header, no size lists; with blocks below the size of direct
//   reads: the slot rounds without the first round's header.
// - barrier: 1 round.
// Ops are applied as the reduce kernels do (AVG as SUM, the caller divides; PREMUL_SUM as
// SUM on inputs the caller already scaled). Buffers are the caller's, any count >= 0,
// any p >= 1. Not thread-safe: runs on the call's thread. Every function requires
// call.window() to be non-null when p > 1 (a group of one has no window and needs none).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "coll/collective_call.h"
#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft::coll {

// root < 0: all_reduce (every member ends with the result); else reduce to root.
void shm_all_reduce(CollectiveCall& call, void* data, std::size_t count, DType dtype, ReduceOp op,
                    int root = -1);
void shm_broadcast(CollectiveCall& call, void* data, std::size_t bytes, int root);
void shm_all_gather(CollectiveCall& call, const void* input, void* output,
                    std::span<const std::size_t> byte_counts);
void shm_reduce_scatter(CollectiveCall& call, const void* input, void* output,
                        std::span<const std::size_t> counts, DType dtype, ReduceOp op);
// The same with `block` bytes (`count` elements) from (to) every member, in rank order without
// gaps: no size lists unless the call needs the general form. Rounds as the general form's, so
// that members that call either form of one collective agree.
void shm_even_all_gather(CollectiveCall& call, const void* input, void* output, std::size_t block);
void shm_even_reduce_scatter(CollectiveCall& call, const void* input, void* output,
                             std::size_t count, DType dtype, ReduceOp op);
void shm_all_to_all(CollectiveCall& call, const void* input,
                    std::span<const std::size_t> send_bytes,
                    std::span<const std::size_t> send_offsets, void* output,
                    std::span<const std::size_t> recv_bytes,
                    std::span<const std::size_t> recv_offsets);
// Every member sends `block` bytes to each, the blocks in rank order one after the other in
// `input` and in `output` (which may be the same buffer).
void shm_even_all_to_all(CollectiveCall& call, const void* input, void* output, std::size_t block);
void shm_barrier(CollectiveCall& call);

}  // namespace weft::coll
