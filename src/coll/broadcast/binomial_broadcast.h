// binomial_broadcast — copies `bytes` bytes of `data` from `root` to every rank along a
// binomial tree (patterns/binomial_tree.h), pipelined in segments.
//
// Phases: the message is cut into S = ceil(bytes / segment) segments, segment =
// call.segment_bytes() (raised when needed so that S stays below kMaxSteps). A non-root rank
// receives segment s from its parent (step s); every rank forwards segment s to its children,
// largest subtree first, while receiving segment s + 1.
//
// Cost: unsegmented (S = 1) ceil(log2 p) (alpha + n beta), the small-message choice. With S
// segments: (ceil(log2 p) + S - 1) rounds of (alpha + (n/S) beta) along the deepest path; the
// root sends ceil(log2 p) n bytes, an inner rank receives n and sends (children) n bytes.
//
// `data` is read on the root and written everywhere else; every rank passes the same bytes
// and root. bytes == 0 sends nothing. Runs on the calling thread; throws weft::Error.
#pragma once

#include <cstddef>

#include "coll/collective_call.h"

namespace weft::coll {

void binomial_broadcast(CollectiveCall& call, void* data, std::size_t bytes, int root);

}  // namespace weft::coll
