#include "coll/reduce_scatter/ring_reduce_scatter.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "coll/outstanding_requests.h"
#include "coll/patterns/ring.h"
#include "coll/scratch.h"
#include "reduce/reduce_kernels.h"
#include "weft/error.h"

namespace weft::coll {

namespace {

using patterns::ElementRange;

// Segments received ahead of the one being reduced (see ring_all_reduce.cc).
constexpr std::size_t kReceiveDepth = 2;

struct Arrival {
  int step;
  std::size_t segment;
};

}  // namespace

void ring_reduce_scatter(CollectiveCall& call, const void* input, void* output,
                         std::span<const std::size_t> counts, DType dtype, ReduceOp op) {
  reduce::check_supported(dtype, op);  // before any message, so every rank fails alike
  const int size = call.size();
  const int rank = call.rank();
  if (counts.size() != static_cast<std::size_t>(size)) {
    throw Error(ErrorCode::kInvalidArgument,
                "ring_reduce_scatter: " + std::to_string(counts.size()) + " counts for " +
                    std::to_string(size) + " ranks");
  }
  const std::size_t esize = size_of(dtype);
  std::vector<std::size_t> offsets(counts.size(), 0);
  for (std::size_t b = 1; b < counts.size(); ++b) offsets[b] = offsets[b - 1] + counts[b - 1];
  const auto* in = static_cast<const uint8_t*>(input);
  auto* out = static_cast<uint8_t*>(output);
  auto block_of = [&](int b) { return ElementRange{offsets[b], counts[b]}; };

  if (size == 1) {
    if (counts[0] > 0 && out != in) std::memmove(out, in, counts[0] * esize);
    return;
  }
  const std::size_t longest = *std::max_element(counts.begin(), counts.end());
  if (longest == 0) return;
  const std::size_t max_segments = kMaxSteps / static_cast<std::size_t>(size - 1);
  if (max_segments == 0) {
    throw Error(ErrorCode::kInternal, "ring_reduce_scatter: " + std::to_string(size) +
                                          " ranks need more step numbers than a call has");
  }
  const patterns::Segmentation seg =
      patterns::make_segmentation(call.segment_bytes(), esize, longest, max_segments);
  const std::size_t stride = seg.segments(longest);
  auto step_id = [&](int step, std::size_t j) {
    return static_cast<uint32_t>(static_cast<std::size_t>(step) * stride + j);
  };
  const patterns::Ring ring(rank, size);
  const int last_step = ring.steps() - 1;

  // Two accumulators: step s reduces into accumulator s % 2 while step s's sends (posted during
  // step s-1) still read the other one. The last step reduces into output instead.
  Scratch accumulators(size > 2 ? 2 * longest * esize : 0);
  auto accumulator = [&](int step) {
    return accumulators.data() + static_cast<std::size_t>(step % 2) * longest * esize;
  };
  const std::size_t slot_bytes = seg.segment_elements * esize;
  Scratch slots(kReceiveDepth * slot_bytes);
  auto slot = [&](std::size_t i) { return slots.data() + (i % kReceiveDepth) * slot_bytes; };
  // After the buffers: settled before they are freed if we leave by an exception.
  OutstandingRequests outstanding(call);
  // sends[t]: the sends of step t, which read accumulator (t - 1) % 2.
  std::vector<std::vector<core::RequestPtr>> sends(static_cast<std::size_t>(ring.steps()));

  // Step 0: this rank's own input for block r-1, straight from input.
  const ElementRange first = block_of(ring.reduce_scatter_send_block(0));
  for (std::size_t j = 0; j < seg.segments(first.count); ++j) {
    const ElementRange part = seg.segment(first.count, j);
    sends[0].push_back(
        outstanding.add(call.isend(ring.right(), step_id(0, j),
                                   in + (first.offset + part.offset) * esize, part.count * esize)));
  }

  std::vector<Arrival> arrivals;
  for (int s = 0; s < ring.steps(); ++s) {
    const std::size_t n = seg.segments(counts[ring.reduce_scatter_recv_block(s)]);
    for (std::size_t j = 0; j < n; ++j) arrivals.push_back({s, j});
  }
  std::vector<core::RequestPtr> receives(arrivals.size());
  auto post = [&](std::size_t i) {
    const std::size_t block_count = counts[ring.reduce_scatter_recv_block(arrivals[i].step)];
    const ElementRange part = seg.segment(block_count, arrivals[i].segment);
    receives[i] = outstanding.add(call.irecv(
        ring.left(), step_id(arrivals[i].step, arrivals[i].segment), slot(i), part.count * esize));
  };

  for (std::size_t i = 0; i < arrivals.size() && i < kReceiveDepth; ++i) post(i);
  int drained_for_step = 1;  // accumulator reuse checked up to this step
  for (std::size_t i = 0; i < arrivals.size(); ++i) {
    const int s = arrivals[i].step;
    const ElementRange block = block_of(ring.reduce_scatter_recv_block(s));
    const ElementRange part = seg.segment(block.count, arrivals[i].segment);
    const uint8_t* own = in + (block.offset + part.offset) * esize;
    call.wait(receives[i]);
    if (s == last_step) {
      reduce::reduce_pair(dtype, op, out + part.offset * esize, slot(i), own, part.count);
    } else {
      // Accumulator s % 2 was last read by step s-1's sends: they must be done first.
      for (; drained_for_step < s; ++drained_for_step) {
        call.wait_all(sends[static_cast<std::size_t>(drained_for_step)]);
        sends[static_cast<std::size_t>(drained_for_step)].clear();
      }
      uint8_t* partial = accumulator(s) + part.offset * esize;
      reduce::reduce_pair(dtype, op, partial, slot(i), own, part.count);
      sends[static_cast<std::size_t>(s + 1)].push_back(outstanding.add(call.isend(
          ring.right(), step_id(s + 1, arrivals[i].segment), partial, part.count * esize)));
    }
    // Segment i + depth lands in this segment's slot: only now is the slot free.
    if (i + kReceiveDepth < arrivals.size()) post(i + kReceiveDepth);
  }
  outstanding.wait_all();
}

}  // namespace weft::coll
