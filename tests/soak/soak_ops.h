// The operations a soak step runs, each with the buffers it owns and the check of its result
// against the plain-loop reference (soak_values.h).
//
// An op computes its expected result when it is made, from the inputs every member's
// (seed, step, world rank) defines. Buffers live as long as the op: an async op is kept until
// its Works have been waited for.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "soak_steps.h"
#include "weft/process_group.h"
#include "weft/work.h"

namespace weft::soak {

struct OpContext {
  uint64_t seed = 0;
  const Step* step = nullptr;
  const std::vector<int>* members = nullptr;  // world ranks in group-rank order
  int me = 0;                                 // my group rank

  int size() const { return static_cast<int>(members->size()); }
  // The key of group rank `rank`'s buffer number `stream` at this step.
  uint64_t key(int rank, uint64_t stream) const;
};

class SoakOp {
 public:
  virtual ~SoakOp() = default;
  // Blocking (returns no Work, the result is ready) or async (returns the Works to wait for).
  virtual std::vector<std::shared_ptr<Work>> issue(ProcessGroup& group, bool async) = 0;
  // The first wrong element ("output[2] element 5: expected 3, got 4"), or nothing.
  virtual std::optional<std::string> check() const = 0;
  // Bytes this rank sent or received (the larger buffer side), for the summary.
  virtual uint64_t bytes() const = 0;
};

// The op of this step for this member, or null when it has nothing to do (a send/recv it is
// not part of, an op that needs two ranks in a group of one).
std::unique_ptr<SoakOp> make_op(const OpContext& context);

}  // namespace weft::soak
