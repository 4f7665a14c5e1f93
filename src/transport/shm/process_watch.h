// ProcessWatch — tells whether another process of this host has exited, without signals and
// without being fooled by a recycled pid: a pidfd (Linux 5.3+) becomes readable when its
// process ends. Where pidfds are missing it falls back to kill(pid, 0).
// A watch of this very process (ranks that are threads of one process) never reports an
// exit. exited() never blocks. Not thread-safe; cheap to call.
#pragma once

#include <sys/types.h>

#include "util/socket.h"

namespace weft::transport {

class ProcessWatch {
 public:
  ProcessWatch() = default;
  explicit ProcessWatch(pid_t pid);

  pid_t pid() const { return pid_; }
  bool exited() const;

 private:
  pid_t pid_ = 0;
  util::Fd pidfd_;
};

}  // namespace weft::transport
