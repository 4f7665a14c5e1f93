#include "coll/algorithms.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>

#include "coll/all_gather/bruck_all_gather.h"
#include "coll/all_gather/ring_all_gather.h"
#include "coll/all_reduce/naive_all_reduce.h"
#include "coll/all_reduce/rabenseifner_all_reduce.h"
#include "coll/all_reduce/recursive_doubling_all_reduce.h"
#include "coll/all_reduce/ring_all_reduce.h"
#include "coll/all_to_all/pairwise_all_to_all.h"
#include "coll/barrier/dissemination_barrier.h"
#include "coll/broadcast/binomial_broadcast.h"
#include "coll/broadcast/scatter_allgather_broadcast.h"
#include "coll/gather/binomial_gather.h"
#include "coll/hierarchical/hierarchical.h"
#include "coll/member_list.h"
#include "coll/reduce/binomial_reduce.h"
#include "coll/reduce_scatter/recursive_halving_reduce_scatter.h"
#include "coll/reduce_scatter/ring_reduce_scatter.h"
#include "coll/scan/scan.h"
#include "coll/scatter/binomial_scatter.h"
#include "coll/selector.h"
#include "coll/shm/shm_collectives.h"
#include "weft/error.h"

namespace weft::coll {

namespace {
[[noreturn]] void unknown(const char* collective, Algorithm algorithm) {
  throw Error(ErrorCode::kInternal,
              std::string(collective) + " cannot run algorithm '" + name_of(algorithm) + "'");
}
// "shm" runs on the group's shared-memory window; without one (a member could not map it), the
// algorithm the selector picks for a group spread over hosts. Every member reaches the same
// answer: the window is agreed on by all.
// use_window's answer for a group without a window: out of line, so that the usual answer
// stays a few instructions in every collective.
[[gnu::noinline]] Algorithm algorithm_without_window(CollectiveCall& call, core::OpKind collective,
                                                     std::size_t bytes, bool equal_blocks) {
  return choose_without_shared_memory(
      SelectionInput{.collective = collective,
                     .bytes = bytes,
                     .group_size = call.size(),
                     .equal_blocks = equal_blocks,
                     .network = &call.communicator().network_settings()});
}

bool use_window(CollectiveCall& call, Algorithm& algorithm, core::OpKind collective,
                std::size_t bytes, bool equal_blocks = true) {
  if (algorithm != Algorithm::kShm) return false;
  if (call.size() == 1 || call.window()) return true;
  algorithm = algorithm_without_window(call, collective, bytes, equal_blocks);
  return false;
}

std::size_t sum(std::span<const std::size_t> sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), std::size_t{0});
}

bool all_equal(std::span<const std::size_t> sizes) {
  return std::adjacent_find(sizes.begin(), sizes.end(), std::not_equal_to<>()) == sizes.end();
}

}  // namespace

void run_broadcast(Algorithm algorithm, CollectiveCall& call, void* data, std::size_t bytes,
                   int root) {
  if (use_window(call, algorithm, core::OpKind::kBroadcast, bytes)) {
    return shm_broadcast(call, data, bytes, root);
  }
  switch (algorithm) {
    case Algorithm::kHierarchical:
      return hierarchical_broadcast(call, data, bytes, root);
    case Algorithm::kBinomial:
      return binomial_broadcast(call, data, bytes, root);
    case Algorithm::kScatterAllgather:
      return scatter_allgather_broadcast(call, data, bytes, root);
    default:
      unknown("broadcast", algorithm);
  }
}

void run_all_reduce(Algorithm algorithm, CollectiveCall& call, const void* input, void* data,
                    std::size_t count, DType dtype, ReduceOp op) {
  const bool window = use_window(call, algorithm, core::OpKind::kAllReduce, count * size_of(dtype));
  // The ring reads the input where it stands; the others reduce in place.
  if (algorithm == Algorithm::kRing && !window) {
    return ring_all_reduce(call, input, data, count, dtype, op);
  }
  if (input != data && count != 0) std::memcpy(data, input, count * size_of(dtype));
  if (window) {
    return shm_all_reduce(call, data, count, dtype, op);
  }
  switch (algorithm) {
    case Algorithm::kHierarchical:
      return hierarchical_all_reduce(call, data, count, dtype, op);
    case Algorithm::kRecursiveDoubling:
      return recursive_doubling_all_reduce(call, data, count, dtype, op);
    case Algorithm::kRabenseifner:
      return rabenseifner_all_reduce(call, data, count, dtype, op);
    case Algorithm::kNaive:
      return naive_all_reduce(call, data, count, dtype, op);
    default:
      unknown("all_reduce", algorithm);
  }
}

void run_reduce(Algorithm algorithm, CollectiveCall& call, void* data, std::size_t count,
                DType dtype, ReduceOp op, int root) {
  if (use_window(call, algorithm, core::OpKind::kReduce, count * size_of(dtype))) {
    return shm_all_reduce(call, data, count, dtype, op, root);
  }
  switch (algorithm) {
    case Algorithm::kHierarchical:
      return hierarchical_reduce(call, data, count, dtype, op, root);
    case Algorithm::kBinomial:
      return binomial_reduce(call, data, count, dtype, op, root);
    default:
      unknown("reduce", algorithm);
  }
}

void run_all_gather(Algorithm algorithm, CollectiveCall& call, const void* input, void* output,
                    std::span<const std::size_t> byte_counts) {
  if (use_window(call, algorithm, core::OpKind::kAllGather, sum(byte_counts),
                 all_equal(byte_counts))) {
    return shm_all_gather(call, input, output, byte_counts);
  }
  switch (algorithm) {
    case Algorithm::kHierarchical:
      return hierarchical_all_gather(call, input, output, byte_counts);
    case Algorithm::kRing:
      return ring_all_gather(call, input, output, byte_counts);
    case Algorithm::kBruck:
      return bruck_all_gather(call, input, output, byte_counts);
    default:
      unknown("all_gather", algorithm);
  }
}

void run_even_all_gather(Algorithm algorithm, CollectiveCall& call, const void* input, void* output,
                         std::size_t block) {
  const int p = call.size();
  if (use_window(call, algorithm, core::OpKind::kAllGather, block * static_cast<std::size_t>(p))) {
    return shm_even_all_gather(call, input, output, block);
  }
  run_all_gather(algorithm, call, input, output, MemberList<std::size_t>(p, block));
}

void run_gather(Algorithm algorithm, CollectiveCall& call, const void* input, void* output,
                std::span<const std::size_t> byte_counts, int root) {
  switch (algorithm) {
    case Algorithm::kHierarchical:
      return hierarchical_gather(call, input, output, byte_counts, root);
    case Algorithm::kBinomial:
      return binomial_gather(call, input, output, byte_counts, root);
    default:
      unknown("gather", algorithm);
  }
}

void run_scatter(Algorithm algorithm, CollectiveCall& call, const void* input, void* output,
                 std::span<const std::size_t> byte_counts, int root) {
  switch (algorithm) {
    case Algorithm::kHierarchical:
      return hierarchical_scatter(call, input, output, byte_counts, root);
    case Algorithm::kBinomial:
      return binomial_scatter(call, input, output, byte_counts, root);
    default:
      unknown("scatter", algorithm);
  }
}

void run_reduce_scatter(Algorithm algorithm, CollectiveCall& call, const void* input, void* output,
                        std::span<const std::size_t> counts, DType dtype, ReduceOp op) {
  if (use_window(call, algorithm, core::OpKind::kReduceScatter, sum(counts) * size_of(dtype))) {
    return shm_reduce_scatter(call, input, output, counts, dtype, op);
  }
  switch (algorithm) {
    case Algorithm::kHierarchical:
      return hierarchical_reduce_scatter(call, input, output, counts, dtype, op);
    case Algorithm::kRing:
      return ring_reduce_scatter(call, input, output, counts, dtype, op);
    case Algorithm::kRecursiveHalving:
      return recursive_halving_reduce_scatter(call, input, output, counts, dtype, op);
    default:
      unknown("reduce_scatter", algorithm);
  }
}

void run_even_reduce_scatter(Algorithm algorithm, CollectiveCall& call, const void* input,
                             void* output, std::size_t count, DType dtype, ReduceOp op) {
  const int p = call.size();
  if (use_window(call, algorithm, core::OpKind::kReduceScatter,
                 count * static_cast<std::size_t>(p) * size_of(dtype))) {
    return shm_even_reduce_scatter(call, input, output, count, dtype, op);
  }
  run_reduce_scatter(algorithm, call, input, output, MemberList<std::size_t>(p, count), dtype, op);
}

void run_all_to_all(Algorithm algorithm, CollectiveCall& call, const void* input,
                    std::span<const std::size_t> send_bytes,
                    std::span<const std::size_t> send_offsets, void* output,
                    std::span<const std::size_t> recv_bytes,
                    std::span<const std::size_t> recv_offsets) {
  if (use_window(call, algorithm, core::OpKind::kAllToAll, sum(send_bytes))) {
    return shm_all_to_all(call, input, send_bytes, send_offsets, output, recv_bytes, recv_offsets);
  }
  switch (algorithm) {
    case Algorithm::kHierarchical:
      return hierarchical_all_to_all(call, input, send_bytes, send_offsets, output, recv_bytes,
                                     recv_offsets);
    case Algorithm::kPairwise:
      return pairwise_all_to_all(call, input, send_bytes, send_offsets, output, recv_bytes,
                                 recv_offsets);
    default:
      unknown("all_to_all", algorithm);
  }
}

void run_even_all_to_all(Algorithm algorithm, CollectiveCall& call, const void* input, void* output,
                         std::size_t block) {
  const int p = call.size();
  if (use_window(call, algorithm, core::OpKind::kAllToAll, block * static_cast<std::size_t>(p))) {
    return shm_even_all_to_all(call, input, output, block);
  }
  if (algorithm == Algorithm::kHierarchical) {
    return hierarchical_even_all_to_all(call, input, output, block);
  }
  MemberList<std::size_t> bytes(p, block), offsets = back_to_back_offsets(p, block);
  run_all_to_all(algorithm, call, input, bytes, offsets, output, bytes, offsets);
}

void run_barrier(Algorithm algorithm, CollectiveCall& call) {
  if (use_window(call, algorithm, core::OpKind::kBarrier, 0)) return shm_barrier(call);
  switch (algorithm) {
    case Algorithm::kHierarchical:
      return hierarchical_barrier(call);
    case Algorithm::kDissemination:
      return dissemination_barrier(call);
    default:
      unknown("barrier", algorithm);
  }
}

void run_scan(Algorithm algorithm, CollectiveCall& call, const void* input, void* output,
              std::size_t count, DType dtype, ReduceOp op, bool exclusive) {
  if (algorithm != Algorithm::kRecursiveDoubling) unknown("scan", algorithm);
  if (exclusive) return exclusive_scan(call, input, output, count, dtype, op);
  inclusive_scan(call, input, output, count, dtype, op);
}

}  // namespace weft::coll
