#include "coll/scatter/binomial_scatter.h"

#include <cstring>
#include <memory>
#include <string>

#include "coll/outstanding_requests.h"
#include "coll/patterns/binomial_tree.h"
#include "weft/error.h"

namespace weft::coll {

void binomial_scatter(CollectiveCall& call, const void* input, void* output,
                      const std::vector<std::size_t>& byte_counts, int root) {
  const int p = call.size(), rank = call.rank();
  if (byte_counts.size() != static_cast<std::size_t>(p)) {
    throw Error(ErrorCode::kInternal, "binomial_scatter: " + std::to_string(byte_counts.size()) +
                                          " byte counts for " + std::to_string(p) + " ranks");
  }
  const auto tree = patterns::BinomialTree::build(rank, p, root);
  // Offsets in rank order (the root's input) and in relative order (the subtree ranges).
  std::vector<std::size_t> offsets(p + 1, 0), relative(p + 1, 0);
  for (int r = 0; r < p; ++r) {
    offsets[r + 1] = offsets[r] + byte_counts[r];
    relative[r + 1] = relative[r] + byte_counts[tree.rank_of(r)];
  }
  auto range_bytes = [&](const patterns::BinomialTree::Node& node) {
    return relative[node.relative + node.extent] - relative[node.relative];
  };
  auto* out = static_cast<unsigned char*>(output);

  std::unique_ptr<unsigned char[]> scratch;
  OutstandingRequests pending(call);  // after `scratch`, whose sends it settles
  if (tree.is_root()) {
    const auto* in = static_cast<const unsigned char*>(input);
    for (const auto& child : tree.children) {
      const std::size_t length = range_bytes(child);
      if (length == 0) continue;
      if (child.rank + child.extent <= p) {
        pending.add(call.isend(child.rank, 0, in + offsets[child.rank], length));
      } else {
        // Ranks child.rank .. p-1, then 0 ..: pack the two pieces in relative order. Only one
        // child range can wrap, so `scratch` is filled once.
        scratch.reset(new unsigned char[length]);
        const std::size_t head = offsets[p] - offsets[child.rank];
        std::memcpy(scratch.get(), in + offsets[child.rank], head);
        std::memcpy(scratch.get() + head, in, length - head);
        pending.add(call.isend(child.rank, 0, scratch.get(), length));
      }
    }
    if (byte_counts[rank] > 0 && out != in + offsets[rank]) {
      std::memcpy(out, in + offsets[rank], byte_counts[rank]);
    }
    pending.wait_all();
    return;
  }

  const std::size_t mine = range_bytes(tree.self);
  if (tree.children.empty()) {
    if (mine > 0) call.recv(tree.parent.rank, 0, out, mine);
    return;
  }
  scratch.reset(new unsigned char[mine > 0 ? mine : 1]);
  if (mine > 0) call.recv(tree.parent.rank, 0, scratch.get(), mine);
  const std::size_t base = relative[tree.self.relative];
  for (const auto& child : tree.children) {
    const std::size_t length = range_bytes(child);
    if (length == 0) continue;
    pending.add(call.isend(child.rank, 0, scratch.get() + relative[child.relative] - base, length));
  }
  if (byte_counts[rank] > 0) std::memcpy(out, scratch.get(), byte_counts[rank]);
  pending.wait_all();
}

}  // namespace weft::coll
