// weft._weft.Work — the Python handle of an operation, as torch.distributed's Work: wait(timeout),
// is_completed(), is_success(), exception(), source_rank().
//
// Ownership: a PyWork holds the operation's buffers (HeldBuffers) and its group. When the handle
// is dropped while the operation still runs (dist.isend(...) without keeping the Work, or a wait
// interrupted by Ctrl-C), the buffers move to a process-wide list of orphans kept until the
// operation completes, so weft never touches freed memory. Tensors of an operation that may
// outlive the call are kept in place (HeldBuffer::keep_in_place: their storage held and pinned
// against reallocation) until the operation is seen to be over: wait() returned or
// is_completed() answered true; their storage stays held while the PyWork lives. Interrupting a
// wait aborts the group: the interrupted operation and every later one fail with AbortedError on
// this rank, and the peers' operations of that group fail too, instead of hanging until their
// timeout. Thread safety: the GIL guards everything here.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "buffers.h"
#include "weft/process_group.h"
#include "weft/work.h"

namespace weft::python {

class PyWork {
 public:
  // timeout: the operation's own (CollectiveOptions::timeout), 0 for the group's.
  PyWork(std::shared_ptr<Work> work, std::shared_ptr<ProcessGroup> group, HeldBuffers buffers,
         std::string op, std::chrono::milliseconds timeout = {});
  ~PyWork();
  PyWork(const PyWork&) = delete;
  PyWork& operator=(const PyWork&) = delete;

  // Returns when the operation has finished; raises its error, TimeoutError when timeout passes
  // first (the operation is then cancelled), or the pending KeyboardInterrupt after aborting
  // the group. Without timeout the wait is bounded by the operation's timeout (its own, else
  // the group's).
  void wait(std::optional<std::chrono::milliseconds> timeout);
  bool is_completed();
  bool is_success() const { return work_->is_success(); }
  py::object exception() const;
  // The group rank a completed receive came from; -1 otherwise.
  int source_rank() const { return work_->source_rank(); }
  const std::string& op() const { return op_; }

 private:
  std::shared_ptr<Work> work_;
  std::shared_ptr<ProcessGroup> group_;
  HeldBuffers buffers_;
  std::string op_;
  std::chrono::milliseconds timeout_;
};

// Drops the orphans whose operations have completed. Called before each new operation.
void release_finished_orphans();

}  // namespace weft::python
