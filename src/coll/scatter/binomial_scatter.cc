#include "coll/scatter/binomial_scatter.h"

#include <cstring>
#include <memory>

#include "coll/outstanding_requests.h"
#include "coll/patterns/binomial_tree.h"
#include "coll/patterns/subtree_blocks.h"

namespace weft::coll {

void binomial_scatter(CollectiveCall& call, const void* input, void* output,
                      std::span<const std::size_t> byte_counts, int root) {
  const int p = call.size(), rank = call.rank();
  const auto tree = patterns::BinomialTree::build(rank, p, root);
  const patterns::SubtreeBlocks blocks(tree, p, byte_counts, "binomial_scatter");
  auto* out = static_cast<unsigned char*>(output);

  std::unique_ptr<unsigned char[]> scratch;
  OutstandingRequests pending(call);  // after `scratch`, whose sends it settles
  if (tree.is_root()) {
    const auto* in = static_cast<const unsigned char*>(input);
    for (const auto& child : tree.children) {
      const std::size_t length = blocks.range_bytes(child);
      if (length == 0) continue;
      if (child.rank + child.extent <= p) {
        pending.add(call.isend(child.rank, 0, in + blocks.offset(child.rank), length));
      } else {
        // Ranks child.rank .. p-1, then 0 ..: pack the two pieces in relative order. Only one
        // child range can wrap, so `scratch` is filled once.
        scratch.reset(new unsigned char[length]);
        const std::size_t head = blocks.offset(p) - blocks.offset(child.rank);
        std::memcpy(scratch.get(), in + blocks.offset(child.rank), head);
        std::memcpy(scratch.get() + head, in, length - head);
        pending.add(call.isend(child.rank, 0, scratch.get(), length));
      }
    }
    if (byte_counts[rank] > 0 && out != in + blocks.offset(rank)) {
      std::memcpy(out, in + blocks.offset(rank), byte_counts[rank]);
    }
    pending.wait_all();
    return;
  }

  const std::size_t mine = blocks.range_bytes(tree.self);
  if (tree.children.empty()) {
    if (mine > 0) call.recv(tree.parent.rank, 0, out, mine);
    return;
  }
  scratch.reset(new unsigned char[mine > 0 ? mine : 1]);
  if (mine > 0) call.recv(tree.parent.rank, 0, scratch.get(), mine);
  const std::size_t base = blocks.relative_offset(tree.self.relative);
  for (const auto& child : tree.children) {
    const std::size_t length = blocks.range_bytes(child);
    if (length == 0) continue;
    pending.add(call.isend(child.rank, 0,
                           scratch.get() + blocks.relative_offset(child.relative) - base, length));
  }
  if (byte_counts[rank] > 0) std::memcpy(out, scratch.get(), byte_counts[rank]);
  pending.wait_all();
}

}  // namespace weft::coll
