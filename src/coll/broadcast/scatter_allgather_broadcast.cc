#include "coll/broadcast/scatter_allgather_broadcast.h"

#include <algorithm>

#include "coll/patterns/binomial_tree.h"

namespace weft::coll {

void scatter_allgather_broadcast(CollectiveCall& call, void* data, std::size_t bytes, int root) {
  const int p = call.size();
  if (p == 1 || bytes == 0) return;
  const auto tree = patterns::BinomialTree::build(call.rank(), p, root);
  auto* base = static_cast<unsigned char*>(data);
  const std::size_t quotient = bytes / p, remainder = bytes % p;
  // Start of block v (v = p gives the end of the message).
  auto start = [&](int v) {
    return v * quotient + std::min<std::size_t>(static_cast<std::size_t>(v), remainder);
  };

  // Phase 1: binomial scatter of subtree ranges.
  if (!tree.is_root()) {
    const int v = tree.self.relative;
    const std::size_t length = start(v + tree.self.extent) - start(v);
    if (length > 0) call.recv(tree.parent.rank, 0, base + start(v), length);
  }
  std::vector<core::RequestPtr> requests;
  for (const auto& child : tree.children) {
    const std::size_t length = start(child.relative + child.extent) - start(child.relative);
    if (length > 0)
      requests.push_back(call.isend(child.rank, 0, base + start(child.relative), length));
  }
  call.wait_all(requests);

  // Phase 2: ring all-gather of the p blocks.
  const int v = tree.self.relative;
  const int right = tree.rank_of((v + 1) % p);
  const int left = tree.rank_of((v + p - 1) % p);
  for (int k = 0; k < p - 1; ++k) {
    const int send_block = (v - k + p) % p;
    const int recv_block = (v - k - 1 + 2 * p) % p;
    const std::size_t send_length = start(send_block + 1) - start(send_block);
    const std::size_t recv_length = start(recv_block + 1) - start(recv_block);
    call.send_recv(send_length > 0 ? right : -1, static_cast<uint32_t>(k + 1),
                   base + start(send_block), send_length, recv_length > 0 ? left : -1,
                   base + start(recv_block), recv_length);
  }
}

}  // namespace weft::coll
