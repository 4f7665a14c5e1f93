#include "coll/all_reduce/naive_all_reduce.h"

#include <cstdint>
#include <vector>

#include "coll/outstanding_requests.h"
#include "coll/patterns/ring.h"
#include "coll/scratch.h"
#include "reduce/reduce_kernels.h"

namespace weft::coll {

void naive_all_reduce(CollectiveCall& call, void* data, std::size_t count, DType dtype,
                      ReduceOp op) {
  reduce::check_supported(dtype, op);  // before any message, so every rank fails alike
  const int size = call.size();
  if (size == 1 || count == 0) return;
  const std::size_t esize = size_of(dtype);
  const std::size_t bytes = count * esize;
  auto* mine = static_cast<uint8_t*>(data);
  // Steps: j for segment j (rank -> 0), `segments` for the result (0 -> rank).
  const patterns::Segmentation seg =
      patterns::make_segmentation(call.segment_bytes(), esize, count, kMaxSteps - 1);
  const std::size_t segments = seg.segments(count);
  const auto result_step = static_cast<uint32_t>(segments);

  if (call.rank() != 0) {
    OutstandingRequests outstanding(call);
    for (std::size_t j = 0; j < segments; ++j) {
      const patterns::ElementRange part = seg.segment(count, j);
      outstanding.add(
          call.isend(0, static_cast<uint32_t>(j), mine + part.offset * esize, part.count * esize));
    }
    outstanding.wait_all();
    call.recv(0, result_step, mine, bytes);
    return;
  }

  // reduce_many applies PREMUL_SUM's factor itself; the caller has already scaled each input.
  const ReduceOp kernel_op = op.kind == ReduceOp::kPremulSum ? ReduceOp(ReduceOp::kSum) : op;
  const std::size_t peers = static_cast<std::size_t>(size - 1);
  const std::size_t slot_bytes = seg.segment_elements * esize;
  Scratch scratch(2 * peers * slot_bytes);  // two segments' worth of inputs
  std::vector<const void*> inputs(static_cast<std::size_t>(size));
  OutstandingRequests outstanding(call);  // after scratch: settled before scratch is freed
  std::vector<core::RequestPtr> receives(2 * peers);
  auto input_slot = [&](std::size_t j, std::size_t peer) {
    return scratch.data() + ((j % 2) * peers + peer) * slot_bytes;
  };
  auto post = [&](std::size_t j) {
    const patterns::ElementRange part = seg.segment(count, j);
    for (std::size_t peer = 0; peer < peers; ++peer) {
      receives[(j % 2) * peers + peer] =
          outstanding.add(call.irecv(static_cast<int>(peer + 1), static_cast<uint32_t>(j),
                                     input_slot(j, peer), part.count * esize));
    }
  };

  post(0);
  for (std::size_t j = 0; j < segments; ++j) {
    for (std::size_t peer = 0; peer < peers; ++peer) call.wait(receives[(j % 2) * peers + peer]);
    if (j + 1 < segments) post(j + 1);  // the other half of scratch, free since segment j-1
    const patterns::ElementRange part = seg.segment(count, j);
    uint8_t* result = mine + part.offset * esize;
    inputs[0] = result;
    for (std::size_t peer = 0; peer < peers; ++peer) inputs[peer + 1] = input_slot(j, peer);
    reduce::reduce_many(dtype, kernel_op, result, inputs.data(), inputs.size(), part.count);
  }
  for (int peer = 1; peer < size; ++peer)
    outstanding.add(call.isend(peer, result_step, mine, bytes));
  outstanding.wait_all();
}

}  // namespace weft::coll
