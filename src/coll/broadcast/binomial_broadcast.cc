#include "coll/broadcast/binomial_broadcast.h"

#include <algorithm>

#include "coll/patterns/binomial_tree.h"
#include "util/inline_vector.h"

namespace weft::coll {

void binomial_broadcast(CollectiveCall& call, void* data, std::size_t bytes, int root) {
  if (call.size() == 1 || bytes == 0) return;
  const auto tree = patterns::BinomialTree::build(call.rank(), call.size(), root);
  auto* base = static_cast<unsigned char*>(data);

  // One step per segment: keep the segment count under the step budget.
  std::size_t segment = std::max<std::size_t>(call.segment_bytes(), 1);
  segment = std::max(segment, (bytes + kMaxSteps - 2) / (kMaxSteps - 1));
  const std::size_t segments = (bytes + segment - 1) / segment;
  auto offset = [&](std::size_t s) { return s * segment; };
  auto length = [&](std::size_t s) { return std::min(segment, bytes - s * segment); };

  const int parent = tree.parent.rank;
  if (parent >= 0) call.recv(parent, 0, base + offset(0), length(0));
  util::InlineVector<core::RequestPtr, patterns::BinomialTree::kMostChildren + 1> requests;
  for (std::size_t s = 0; s < segments; ++s) {
    // Segment s is here; receive s + 1 while s goes down. Everything posted in this round is
    // waited for in one wait_all, so nothing is left pending when a wait throws.
    requests.clear();
    if (parent >= 0 && s + 1 < segments) {
      requests.push_back(
          call.irecv(parent, static_cast<uint32_t>(s + 1), base + offset(s + 1), length(s + 1)));
    }
    for (const auto& child : tree.children) {
      requests.push_back(
          call.isend(child.rank, static_cast<uint32_t>(s), base + offset(s), length(s)));
    }
    call.wait_all(requests);
  }
}

}  // namespace weft::coll
