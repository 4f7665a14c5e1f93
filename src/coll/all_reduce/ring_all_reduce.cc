#include "coll/all_reduce/ring_all_reduce.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "coll/outstanding_requests.h"
#include "coll/patterns/ring.h"
#include "coll/scratch.h"
#include "reduce/reduce_kernels.h"
#include "weft/error.h"

namespace weft::coll {

namespace {

using patterns::ElementRange;
using patterns::Ring;
using patterns::Segmentation;

// Segments received ahead of the one being reduced. Two is enough for the transport to fill
// one segment while the kernel reduces the other.
// NOTE(tuning): measure 3-4 on hosts where one segment's reduction is shorter than a message's
// latency.
constexpr std::size_t kReceiveDepth = 2;

// One segment to receive: step of the phase and segment index within the step's block.
struct Arrival {
  int step;
  std::size_t segment;
};

struct RingLayout {
  Ring ring;
  std::size_t count;
  std::size_t element_bytes;
  Segmentation segmentation;
  std::size_t segments_per_step;  // the largest block's segment count: step numbering stride

  ElementRange block(int b) const { return patterns::block_range(count, ring.size(), b); }
  // Step number of segment j of step s of phase 0 (reduce-scatter) or 1 (all-gather).
  uint32_t step_id(int phase, int step, std::size_t j) const {
    const auto stride = static_cast<std::size_t>(ring.steps());
    return static_cast<uint32_t>(
        (phase * stride + static_cast<std::size_t>(step)) * segments_per_step + j);
  }
};

// Runs one phase. At step s this rank receives block recv_block(s) segment by segment (into a
// scratch slot to reduce with `source`'s into data, or straight into data to gather) and
// forwards each finished segment of data as part of step s+1, whose send block is the same
// block. Step 0 sends block send_block(0) of `source` whole. Returns with every send of the
// phase complete, so data may be overwritten after.
template <typename RecvBlock>
void run_phase(CollectiveCall& call, const RingLayout& layout, int phase, int first_send_block,
               RecvBlock recv_block, const uint8_t* source, uint8_t* data, DType dtype,
               ReduceOp op) {
  const bool reducing = phase == 0;
  const Ring& ring = layout.ring;
  const std::size_t esize = layout.element_bytes;
  const Segmentation& seg = layout.segmentation;

  // Gathering receives straight into data, so it can run further ahead at no memory cost.
  const std::size_t depth = reducing ? kReceiveDepth : 2 * kReceiveDepth;
  Scratch scratch(reducing ? depth * seg.segment_elements * esize : 0);
  OutstandingRequests outstanding(call);  // after scratch: settled before scratch is freed
  auto slot = [&](std::size_t i) {
    return scratch.data() + (i % depth) * seg.segment_elements * esize;
  };

  // Step 0: everything of the first block, straight from data.
  const ElementRange first = layout.block(first_send_block);
  for (std::size_t j = 0; j < seg.segments(first.count); ++j) {
    const ElementRange part = seg.segment(first.count, j);
    outstanding.add(call.isend(ring.right(), layout.step_id(phase, 0, j),
                               source + (first.offset + part.offset) * esize, part.count * esize));
  }

  // Every segment this rank will receive in the phase, in order.
  std::vector<Arrival> arrivals;
  for (int s = 0; s < ring.steps(); ++s) {
    const std::size_t n = seg.segments(layout.block(recv_block(s)).count);
    for (std::size_t j = 0; j < n; ++j) arrivals.push_back({s, j});
  }
  auto where = [&](const Arrival& a) {
    const ElementRange block = layout.block(recv_block(a.step));
    const ElementRange part = seg.segment(block.count, a.segment);
    return ElementRange{block.offset + part.offset, part.count};
  };

  std::vector<core::RequestPtr> receives(arrivals.size());
  auto post = [&](std::size_t i) {
    const ElementRange range = where(arrivals[i]);
    uint8_t* target = reducing ? slot(i) : data + range.offset * esize;
    receives[i] = outstanding.add(
        call.irecv(ring.left(), layout.step_id(phase, arrivals[i].step, arrivals[i].segment),
                   target, range.count * esize));
  };

  for (std::size_t i = 0; i < arrivals.size() && i < depth; ++i) post(i);
  for (std::size_t i = 0; i < arrivals.size(); ++i) {
    call.wait(receives[i]);
    const ElementRange range = where(arrivals[i]);
    uint8_t* mine = data + range.offset * esize;
    // Segment i + depth lands in this segment's slot: reduce before posting it.
    if (reducing) {
      reduce::reduce_pair(dtype, op, mine, source + range.offset * esize, slot(i), range.count);
    }
    if (i + depth < arrivals.size()) post(i + depth);
    if (arrivals[i].step + 1 < ring.steps()) {
      outstanding.add(call.isend(ring.right(),
                                 layout.step_id(phase, arrivals[i].step + 1, arrivals[i].segment),
                                 mine, range.count * esize));
    }
  }
  outstanding.wait_all();
}

}  // namespace

void ring_all_reduce(CollectiveCall& call, const void* input, void* data, std::size_t count,
                     DType dtype, ReduceOp op) {
  reduce::check_supported(dtype, op);  // before any message, so every rank fails alike
  const int size = call.size();
  if (count == 0) return;
  if (size == 1) {
    if (input != data) std::memcpy(data, input, count * size_of(dtype));
    return;
  }
  const std::size_t max_segments = kMaxSteps / (2 * static_cast<std::size_t>(size - 1));
  if (max_segments == 0) {
    throw Error(ErrorCode::kInternal, "ring_all_reduce: " + std::to_string(size) +
                                          " ranks need more step numbers than a call has");
  }
  const std::size_t esize = size_of(dtype);
  const Ring ring(call.rank(), size);
  const std::size_t longest = patterns::block_range(count, size, 0).count;
  const Segmentation seg =
      patterns::make_segmentation(call.segment_bytes(), esize, longest, max_segments);
  const RingLayout layout{ring, count, esize, seg, seg.segments(longest)};
  auto* bytes = static_cast<uint8_t*>(data);

  run_phase(
      call, layout, 0, ring.reduce_scatter_send_block(0),
      [&](int s) { return ring.reduce_scatter_recv_block(s); }, static_cast<const uint8_t*>(input),
      bytes, dtype, op);
  run_phase(
      call, layout, 1, ring.all_gather_send_block(0),
      [&](int s) { return ring.all_gather_recv_block(s); }, bytes, bytes, dtype, op);
}

}  // namespace weft::coll
