#include "coll/gather/binomial_gather.h"

#include <cstring>
#include <memory>
#include <string>

#include "coll/outstanding_requests.h"
#include "coll/patterns/binomial_tree.h"
#include "weft/error.h"

namespace weft::coll {

void binomial_gather(CollectiveCall& call, const void* input, void* output,
                     const std::vector<std::size_t>& byte_counts, int root) {
  const int p = call.size(), rank = call.rank();
  if (byte_counts.size() != static_cast<std::size_t>(p)) {
    throw Error(ErrorCode::kInternal, "binomial_gather: " + std::to_string(byte_counts.size()) +
                                          " byte counts for " + std::to_string(p) + " ranks");
  }
  const auto tree = patterns::BinomialTree::build(rank, p, root);
  // Offsets in rank order (the output) and in relative order (the subtree ranges).
  std::vector<std::size_t> offsets(p + 1, 0), relative(p + 1, 0);
  for (int r = 0; r < p; ++r) {
    offsets[r + 1] = offsets[r] + byte_counts[r];
    relative[r + 1] = relative[r] + byte_counts[tree.rank_of(r)];
  }
  auto range_bytes = [&](const patterns::BinomialTree::Node& node) {
    return relative[node.relative + node.extent] - relative[node.relative];
  };

  if (tree.is_root()) {
    auto* out = static_cast<unsigned char*>(output);
    if (byte_counts[rank] > 0 && out + offsets[rank] != input) {
      std::memcpy(out + offsets[rank], input, byte_counts[rank]);
    }
    std::unique_ptr<unsigned char[]> wrapped;  // the child range that runs past rank p - 1
    const patterns::BinomialTree::Node* wrapped_child = nullptr;
    // Only one child range can wrap, so `wrapped` is allocated at most once, before any
    // receive into it is posted.
    for (const auto& child : tree.children) {
      if (range_bytes(child) > 0 && child.rank + child.extent > p) {
        wrapped.reset(new unsigned char[range_bytes(child)]);
        wrapped_child = &child;
      }
    }
    OutstandingRequests pending(call);  // after the buffers its receives fill
    for (const auto& child : tree.children) {
      const std::size_t length = range_bytes(child);
      if (length == 0) continue;
      void* into = &child == wrapped_child ? wrapped.get() : out + offsets[child.rank];
      pending.add(call.irecv(child.rank, 0, into, length));
    }
    pending.wait_all();
    if (wrapped_child != nullptr) {
      const std::size_t head = offsets[p] - offsets[wrapped_child->rank];
      std::memcpy(out + offsets[wrapped_child->rank], wrapped.get(), head);
      std::memcpy(out, wrapped.get() + head, range_bytes(*wrapped_child) - head);
    }
    return;
  }

  const std::size_t mine = range_bytes(tree.self);
  if (tree.children.empty()) {
    if (mine > 0) call.send(tree.parent.rank, 0, input, mine);
    return;
  }
  std::unique_ptr<unsigned char[]> range(new unsigned char[mine > 0 ? mine : 1]);
  if (byte_counts[rank] > 0) std::memcpy(range.get(), input, byte_counts[rank]);
  const std::size_t base = relative[tree.self.relative];
  OutstandingRequests pending(call);
  for (const auto& child : tree.children) {
    const std::size_t length = range_bytes(child);
    if (length == 0) continue;
    pending.add(call.irecv(child.rank, 0, range.get() + relative[child.relative] - base, length));
  }
  pending.wait_all();
  if (mine > 0) call.send(tree.parent.rank, 0, range.get(), mine);
}

}  // namespace weft::coll
