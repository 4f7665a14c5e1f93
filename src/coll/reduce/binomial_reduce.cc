#include "coll/reduce/binomial_reduce.h"

#include <cstdint>
#include <string>
#include <vector>

#include "coll/outstanding_requests.h"
#include "coll/patterns/binomial_tree.h"
#include "coll/patterns/ring.h"
#include "coll/scratch.h"
#include "reduce/reduce_kernels.h"
#include "weft/error.h"

namespace weft::coll {

namespace {
// Segments in flight per child (receives) and per parent link (partial results being sent).
constexpr std::size_t kDepth = 2;
}  // namespace

void binomial_reduce(CollectiveCall& call, void* data, std::size_t count, DType dtype, ReduceOp op,
                     int root) {
  reduce::check_supported(dtype, op);  // before any message, so every rank fails alike
  const int size = call.size();
  if (root < 0 || root >= size) {
    throw Error(ErrorCode::kInvalidArgument, "binomial_reduce: root " + std::to_string(root) +
                                                 " outside a group of " + std::to_string(size));
  }
  if (size == 1 || count == 0) return;
  const patterns::BinomialTree tree = patterns::BinomialTree::build(call.rank(), size, root);
  const int parent = tree.parent.rank;  // -1 at the root
  std::vector<int> children;
  for (const auto& child : tree.children) children.push_back(child.rank);

  const std::size_t esize = size_of(dtype);
  auto* mine = static_cast<uint8_t*>(data);
  // Step j carries segment j (child -> parent).
  const patterns::Segmentation seg =
      patterns::make_segmentation(call.segment_bytes(), esize, count, kMaxSteps);
  const std::size_t segments = seg.segments(count);
  const std::size_t slot_bytes = seg.segment_elements * esize;

  if (children.empty()) {  // a leaf: no reduction, send data as it is
    OutstandingRequests outstanding(call);
    for (std::size_t j = 0; j < segments; ++j) {
      const patterns::ElementRange part = seg.segment(count, j);
      outstanding.add(call.isend(parent, static_cast<uint32_t>(j), mine + part.offset * esize,
                                 part.count * esize));
    }
    outstanding.wait_all();
    return;
  }

  // reduce_many applies PREMUL_SUM's factor itself; the caller has already scaled each input.
  const ReduceOp kernel_op = op.kind == ReduceOp::kPremulSum ? ReduceOp(ReduceOp::kSum) : op;
  const std::size_t nchildren = children.size();
  Scratch inputs_scratch(kDepth * nchildren * slot_bytes);
  const bool is_root = parent < 0;
  Scratch partials(is_root ? 0 : kDepth * slot_bytes);
  OutstandingRequests outstanding(call);  // after the scratch: settled before it is freed
  std::vector<core::RequestPtr> receives(kDepth * nchildren);
  std::vector<core::RequestPtr> partial_sends(kDepth);
  auto input_slot = [&](std::size_t j, std::size_t c) {
    return inputs_scratch.data() + ((j % kDepth) * nchildren + c) * slot_bytes;
  };
  auto post = [&](std::size_t j) {
    const patterns::ElementRange part = seg.segment(count, j);
    for (std::size_t c = 0; c < nchildren; ++c) {
      receives[(j % kDepth) * nchildren + c] = outstanding.add(
          call.irecv(children[c], static_cast<uint32_t>(j), input_slot(j, c), part.count * esize));
    }
  };

  std::vector<const void*> inputs(nchildren + 1);
  for (std::size_t j = 0; j < segments && j < kDepth; ++j) post(j);
  for (std::size_t j = 0; j < segments; ++j) {
    const patterns::ElementRange part = seg.segment(count, j);
    for (std::size_t c = 0; c < nchildren; ++c) call.wait(receives[(j % kDepth) * nchildren + c]);
    inputs[0] = mine + part.offset * esize;
    for (std::size_t c = 0; c < nchildren; ++c) inputs[c + 1] = input_slot(j, c);
    if (is_root) {
      reduce::reduce_many(dtype, kernel_op, mine + part.offset * esize, inputs.data(),
                          inputs.size(), part.count);
    } else {
      // The partial slot of segment j - kDepth must have reached the parent before reuse.
      // (Waiting on a send to the parent cannot deadlock: the tree has no cycle.)
      auto& previous = partial_sends[j % kDepth];
      if (previous) call.wait(previous);
      uint8_t* partial = partials.data() + (j % kDepth) * slot_bytes;
      reduce::reduce_many(dtype, kernel_op, partial, inputs.data(), inputs.size(), part.count);
      previous = outstanding.add(
          call.isend(parent, static_cast<uint32_t>(j), partial, part.count * esize));
    }
    if (j + kDepth < segments) post(j + kDepth);  // this segment's input slots are free now
  }
  outstanding.wait_all();
}

}  // namespace weft::coll
