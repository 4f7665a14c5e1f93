#include "util/remote_barrier.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace weft::util {

namespace {

long membarrier(int command) { return syscall(SYS_membarrier, command, 0, 0); }

bool register_process() {
  long offered = membarrier(MEMBARRIER_CMD_QUERY);
  if (offered < 0 || !(offered & MEMBARRIER_CMD_GLOBAL_EXPEDITED) ||
      !(offered & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED)) {
    return false;
  }
  return membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
}

}  // namespace

bool enable_remote_barriers() {
  static const bool registered = register_process();
  return registered;
}

bool remote_barrier() { return membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0; }

}  // namespace weft::util
