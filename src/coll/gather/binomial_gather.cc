#include "coll/gather/binomial_gather.h"

#include <cstring>
#include <memory>

#include "coll/outstanding_requests.h"
#include "coll/patterns/binomial_tree.h"
#include "coll/patterns/subtree_blocks.h"

namespace weft::coll {

void binomial_gather(CollectiveCall& call, const void* input, void* output,
                     std::span<const std::size_t> byte_counts, int root) {
  const int p = call.size(), rank = call.rank();
  const auto tree = patterns::BinomialTree::build(rank, p, root);
  const patterns::SubtreeBlocks blocks(tree, p, byte_counts, "binomial_gather");

  if (tree.is_root()) {
    auto* out = static_cast<unsigned char*>(output);
    if (byte_counts[rank] > 0 && out + blocks.offset(rank) != input) {
      std::memcpy(out + blocks.offset(rank), input, byte_counts[rank]);
    }
    std::unique_ptr<unsigned char[]> wrapped;  // the child range that runs past rank p - 1
    const patterns::BinomialTree::Node* wrapped_child = nullptr;
    // Only one child range can wrap, so `wrapped` is allocated at most once, before any
    // receive into it is posted.
    for (const auto& child : tree.children) {
      if (blocks.range_bytes(child) > 0 && child.rank + child.extent > p) {
        wrapped.reset(new unsigned char[blocks.range_bytes(child)]);
        wrapped_child = &child;
      }
    }
    OutstandingRequests pending(call);  // after the buffers its receives fill
    for (const auto& child : tree.children) {
      const std::size_t length = blocks.range_bytes(child);
      if (length == 0) continue;
      void* into = &child == wrapped_child ? wrapped.get() : out + blocks.offset(child.rank);
      pending.add(call.irecv(child.rank, 0, into, length));
    }
    pending.wait_all();
    if (wrapped_child != nullptr) {
      const std::size_t head = blocks.offset(p) - blocks.offset(wrapped_child->rank);
      std::memcpy(out + blocks.offset(wrapped_child->rank), wrapped.get(), head);
      std::memcpy(out, wrapped.get() + head, blocks.range_bytes(*wrapped_child) - head);
    }
    return;
  }

  const std::size_t mine = blocks.range_bytes(tree.self);
  if (tree.children.empty()) {
    if (mine > 0) call.send(tree.parent.rank, 0, input, mine);
    return;
  }
  std::unique_ptr<unsigned char[]> range(new unsigned char[mine > 0 ? mine : 1]);
  if (byte_counts[rank] > 0) std::memcpy(range.get(), input, byte_counts[rank]);
  const std::size_t base = blocks.relative_offset(tree.self.relative);
  OutstandingRequests pending(call);
  for (const auto& child : tree.children) {
    const std::size_t length = blocks.range_bytes(child);
    if (length == 0) continue;
    pending.add(call.irecv(child.rank, 0,
                           range.get() + blocks.relative_offset(child.relative) - base, length));
  }
  pending.wait_all();
  if (mine > 0) call.send(tree.parent.rank, 0, range.get(), mine);
}

}  // namespace weft::coll
