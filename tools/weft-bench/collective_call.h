// One call of a case's collective through the public API, in the blocking or the i* form.
//
// Contract: launch() issues the op on the case's views. Blocking (async = false): the op has
// completed when launch returns, and it returns null. Async: it returns the op's Work (for
// sendrecv, one Work standing for the batch_isend_irecv pair), which the caller waits for.
// weft::Error propagates unchanged.
#pragma once

#include <memory>

#include "bench_case.h"
#include "weft/process_group.h"
#include "weft/work.h"

namespace weft_bench {

std::shared_ptr<weft::Work> launch(weft::ProcessGroup& group, const BenchCase& c,
                                   CaseBuffers& buffers, const weft::CollectiveOptions& options,
                                   bool async);

}  // namespace weft_bench
