// The bench's own bookkeeping between ranks: MAX of numbers over ranks and a roll call,
// over point-to-point messages through rank 0.
//
// Contract: collective over the group (every rank calls the same functions in the same
// order). It deliberately avoids the collectives under test, so that a broken all_reduce
// cannot hide its own wrong-element count or corrupt the timings. Cost: 2(n-1) small
// messages, always outside the timed region.
#pragma once

#include <string>
#include <vector>

#include "weft/process_group.h"

namespace weft_bench {

class RankControl {
 public:
  explicit RankControl(weft::ProcessGroup& group) : group_(group) {}

  // Element-wise maximum over ranks; every rank gets the result.
  std::vector<double> max_over_ranks(std::vector<double> values);
  double max_over_ranks(double value) { return max_over_ranks(std::vector<double>{value})[0]; }

  // At rank 0: one line per rank ("pid 1234 on host"); empty elsewhere.
  std::vector<std::string> roll_call();

 private:
  weft::ProcessGroup& group_;
};

}  // namespace weft_bench
