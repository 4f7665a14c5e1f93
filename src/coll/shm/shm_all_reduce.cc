#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "coll/member_list.h"
#include "coll/shm/shm_collectives.h"
#include "reduce/reduce_kernels.h"
#include "util/small_copy.h"
#include "util/stream_copy.h"

namespace weft::coll {

namespace {

static_assert(CollectiveCall::eager_bytes() <= 16, "eager data is copied by copy_at_most_16");

constexpr std::size_t kAlign = 64;
// Up to this many bytes over all members, each member reduces everything itself in one round.
constexpr std::size_t kOneRoundLimit = 256 * 1024;
// A reduced share goes to the slot and to the member's own buffer in blocks this large (well
// inside the first-level cache, with the inputs of the block).
constexpr std::size_t kShareBlockBytes = 4096;

std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The caller scaled its own input for PREMUL_SUM; reduce_many would scale again.
ReduceOp as_applied(ReduceOp op) { return op.kind == ReduceOp::kPremulSum ? ReduceOp::kSum : op; }

// Member m's share of a piece of n elements: [begin, end).
std::size_t share_begin(std::size_t n, int m, int p) { return n * m / p; }

void one_round(CollectiveCall& call, uint8_t* data, std::size_t count, DType dtype, ReduceOp op,
               int root) {
  std::size_t bytes = count * size_of(dtype);
  if (bytes) call.fill_slot(call.round_slot(bytes), data, bytes, bytes);
  call.finish_round();
  if (root >= 0 && call.rank() != root) return;
  MemberList<const void*> inputs(call.size());
  for (int m = 0; m < call.size(); ++m) inputs[m] = call.member_slot(m, bytes);
  reduce::reduce_many(dtype, op, data, inputs.data(), call.size(), count);
}

// The others write their inputs and go on; the root reduces them when it gets there, in member
// order as one_round does (its own input is copied aside: reduce_many's output may not alias
// any input but the first).
void eager_reduce(CollectiveCall& call, uint8_t* data, std::size_t count, DType dtype, ReduceOp op,
                  int root) {
  std::size_t bytes = count * size_of(dtype);
  call.begin_eager();
  uint8_t* mine = call.my_eager_data();
  util::copy_at_most_16(mine, data, bytes);
  if (call.rank() == root) {
    // Filled with `mine` rather than null: a list of nulls is cleared with a call to memset,
    // a visible part of this call.
    MemberList<const void*> inputs(call.size(), mine);
    for (int m = 0; m < call.size(); ++m) {
      if (m != root) inputs[m] = call.await_eager_data(m);
    }
    reduce::reduce_many(dtype, op, data, inputs.data(), call.size(), count);
  }
  call.end_eager();
}

// Reduces one share into `shared` (where the other members copy it from) and, when `own` is
// not null, into `own` too, block by block: each block is copied while it is still in the
// cache, instead of being read back from the slot with the other members' shares a round later.
// `stream_shared`: write `shared` with streaming stores, as the call fills its slot (the share
// is a 1/p part of the slot's writes: half of them at 2 members).
void reduce_share(DType dtype, ReduceOp op, uint8_t* shared, uint8_t* own,
                  std::span<const void* const> inputs, std::size_t count, bool stream_shared) {
  const std::size_t element = size_of(dtype);
  const std::size_t block = std::max<std::size_t>(1, kShareBlockBytes / element);
  MemberList<const void*> at(static_cast<int>(inputs.size()));
  // Streamed to the slot, a block is reduced where it stays in the cache: the same reduction,
  // in the same order, so the result does not depend on the kind of store.
  alignas(64) uint8_t staged[kShareBlockBytes];
  for (std::size_t done = 0; done < count; done += block) {
    std::size_t n = std::min(block, count - done), offset = done * element;
    for (std::size_t m = 0; m < inputs.size(); ++m) {
      at[static_cast<int>(m)] = static_cast<const uint8_t*>(inputs[m]) + offset;
    }
    uint8_t* reduced = stream_shared ? staged : shared + offset;
    reduce::reduce_many(dtype, op, reduced, at.data(), inputs.size(), n);
    if (stream_shared) util::copy_streaming(shared + offset, reduced, n * element);
    if (own) std::memcpy(own + offset, reduced, n * element);
  }
}

// Round k carries, at the slot's start, the parts of input piece k that the other members
// reduce (this member's own share stays out: it reduces that from its own buffer), and after
// them this member's reduced share of piece k-1 (reduced from everyone's round k-1 slots, which
// may be read until we arrive at round k).
void pipelined(CollectiveCall& call, uint8_t* data, std::size_t count, DType dtype, ReduceOp op,
               int root) {
  const int p = call.size();
  const int me = call.rank();
  const std::size_t element = size_of(dtype);
  const std::size_t budget = call.round_bytes();
  // piece bytes (aligned) + a share (piece/p + 1 element) must fit the budget.
  std::size_t piece =
      std::max<std::size_t>(1, (budget - kAlign - element) * p / ((p + 1) * element));
  const std::size_t pieces = (count + piece - 1) / piece;
  const std::size_t share_offset = align_up(piece * element);
  std::vector<const void*> inputs(p);
  auto piece_length = [&](std::size_t k) { return std::min(piece, count - k * piece); };
  const bool keeps_result = root < 0 || me == root;
  for (std::size_t k = 0; k <= pieces; ++k) {
    uint8_t* slot = call.round_slot();
    if (k > 0) {
      std::size_t n = piece_length(k - 1);
      std::size_t begin = share_begin(n, me, p), end = share_begin(n, me + 1, p);
      for (int m = 0; m < p; ++m) inputs[m] = call.member_slot(m) + begin * element;
      uint8_t* mine = data + ((k - 1) * piece + begin) * element;
      inputs[me] = mine;
      reduce_share(dtype, op, slot + share_offset, keeps_result ? mine : nullptr, inputs,
                   end - begin, call.slot_fills_stream());
    }
    if (k < pieces) {
      std::size_t n = piece_length(k);
      const uint8_t* in = data + k * piece * element;
      std::size_t mine_begin = share_begin(n, me, p), mine_end = share_begin(n, me + 1, p);
      const std::size_t written = (n - (mine_end - mine_begin)) * element;
      call.fill_slot(slot, in, mine_begin * element, written);
      call.fill_slot(slot + mine_end * element, in + mine_end * element, (n - mine_end) * element,
                     written);
    }
    call.finish_round();
    if (k == 0 || (root >= 0 && me != root)) continue;
    std::size_t n = piece_length(k - 1);
    uint8_t* out = data + (k - 1) * piece * element;
    for (int m = 0; m < p; ++m) {
      if (m == me) continue;  // reduce_share put it there
      std::size_t begin = share_begin(n, m, p), end = share_begin(n, m + 1, p);
      std::memcpy(out + begin * element, call.member_slot(m) + share_offset,
                  (end - begin) * element);
    }
  }
}

}  // namespace

void shm_all_reduce(CollectiveCall& call, void* data, std::size_t count, DType dtype, ReduceOp op,
                    int root) {
  if (call.size() == 1) return;  // the reduction of one input is that input
  auto* bytes = static_cast<uint8_t*>(data);
  std::size_t total = count * size_of(dtype);
  // Zero elements still take one round, so that mismatched calls are still caught.
  if (root >= 0 && total <= call.eager_bytes()) {
    eager_reduce(call, bytes, count, dtype, as_applied(op), root);
  } else if (total * call.size() <= kOneRoundLimit && total <= call.round_bytes()) {
    one_round(call, bytes, count, dtype, as_applied(op), root);
  } else {
    pipelined(call, bytes, count, dtype, as_applied(op), root);
  }
}

}  // namespace weft::coll
