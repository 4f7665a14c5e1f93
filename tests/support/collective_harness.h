// Runs one algorithm of the coll layer directly (no API, no selector) inside a thread rank:
// for testing each algorithm on its own, with a tiny segment size when asked.
#pragma once

#include "api/process_group_impl.h"
#include "coll/collective_call.h"
#include "core/communicator.h"
#include "weft/process_group.h"

namespace weft::testing {

inline coll::CollectiveCall make_call(ProcessGroup& group, const char* name, core::OpKind kind,
                                      DType dtype, std::size_t count,
                                      ReduceOp::Kind reduce = ReduceOp::kSum, int root = -1,
                                      std::size_t segment_bytes = 1u << 20) {
  core::Communicator& comm = api::communicator_of(group);
  core::OpSignature signature;
  signature.kind = kind;
  signature.dtype = dtype;
  signature.reduce = reduce;
  signature.root = root;
  signature.count = count;
  return coll::CollectiveCall(comm, name, signature, comm.next_seq(), comm.deadline_from_now(),
                              segment_bytes);
}

}  // namespace weft::testing
