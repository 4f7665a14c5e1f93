// Checks of the collectives that a group spread over hosts runs hierarchically (besides
// all_reduce, broadcast, reduce and all_gather, which rank_program.cc checks itself), each
// result against a plain loop. Every member of the group calls each check; it returns what was
// wrong, "" when every result was right.
#pragma once

#include <string>

#include "weft/weft.h"

namespace weft::testing {

// reduce_scatter of every dtype with every reduce op valid for it (even blocks, and zero).
std::string check_reduce_scatter_every_dtype_and_op(ProcessGroup& group);
// reduce_scatter with uneven counts (zero for some ranks; totals not divisible by the size)
// and large blocks.
std::string check_uneven_reduce_scatter(ProcessGroup& group);
// all_to_all of even blocks (zero, small, large) and with split sizes (zeros, large pieces).
std::string check_all_to_all(ProcessGroup& group);
// gather and scatter from every root, at several sizes (zero too).
std::string check_gather_and_scatter(ProcessGroup& group);
// Nobody leaves a barrier before the last member arrives.
std::string check_barrier(ProcessGroup& group);

}  // namespace weft::testing
