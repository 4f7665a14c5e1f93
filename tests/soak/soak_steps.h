// One step of the soak, drawn from the shared stream: what to run, on which group, with what.
//
// Every rank draws every step in full, member of the step's group or not, so that the shared
// stream stays in step on all ranks; what depends on a rank (its input, uneven sizes, splits)
// comes from soak_random.h's hashes, not from the stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "soak_random.h"
#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft::soak {

enum class OpKind {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kGather,
  kScatter,
  kReduceScatter,
  kAllToAll,
  kBarrier,
  kSendRecv,
  kRing,
  kScan,
  kWaitSome,  // waits for some of the async ops in flight, in a random order
  kRegroup,   // replaces one of the subgroups by a new one
};

const char* name_of(OpKind op);

struct Step {
  uint64_t index = 0;
  OpKind op = OpKind::kBarrier;
  DType dtype = DType::kFloat32;
  ReduceOp reduce;
  std::size_t count = 0;
  int slot = 0;  // which group (soak_groups.h)
  // Raw draws for the root (broadcast, reduce, gather, scatter; send/recv's sender) and
  // send/recv's receiver: the groups of one split slot differ in size, so each group maps
  // them onto its own ranks (root_in, receiver_in).
  uint64_t root_draw = 0;
  uint64_t receiver_draw = 0;
  int tag = 0;  // send/recv, ring
  bool async = false;
  bool in_place = false;
  bool uneven = false;   // the list forms with sizes that differ by rank, all_to_all's splits
  bool variant = false;  // op-specific: exscan, kAnySource, empty non-root buffers, batch p2p

  int root_in(int group_size) const;
  // Another rank than root_in(group_size); group_size > 1.
  int receiver_in(int group_size) const;
};

struct StepLimits {
  std::size_t max_bytes = 4 << 20;  // the largest buffer an op allocates on one rank
};

// Draws step `index` of a job of `world_size` ranks over `group_slots` group slots. Sizes are
// drawn for the world (a count that the world size does not divide, the byte limit over the
// world), so that they do not depend on which group a rank is in.
Step draw_step(SoakRandom& random, uint64_t index, int world_size, int group_slots,
               const StepLimits& limits);

// "all_reduce(sum) float32 x1000 async in-place" and the like, for messages.
std::string describe(const Step& step);

}  // namespace weft::soak
