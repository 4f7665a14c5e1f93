// weft::Work — the handle of an operation that runs asynchronously.
//
// Contract: the buffers an operation uses stay owned by the caller and must stay alive and
// untouched until wait() has returned or is_completed() is true. Work is thread-safe: any
// thread may poll or wait. A failed operation stores its weft::Error; wait() rethrows it.
#pragma once

#include <chrono>
#include <exception>
#include <optional>

#include "weft/export.h"

namespace weft {

class WEFT_API Work {
 public:
  virtual ~Work() = default;

  // Blocks until the operation finishes; rethrows its error. With a timeout, throws
  // weft::Error(kTimeout) when it passes first, and cancels the operation so that its
  // buffers are no longer touched.
  virtual void wait(std::optional<std::chrono::milliseconds> timeout = std::nullopt) = 0;
  virtual bool is_completed() const = 0;
  // Completed without an error.
  virtual bool is_success() const = 0;
  // The stored error of a failed operation, null otherwise.
  virtual std::exception_ptr exception() const = 0;
  // The group rank a completed receive came from (useful with kAnySource); -1 otherwise.
  virtual int source_rank() const = 0;
};

}  // namespace weft
