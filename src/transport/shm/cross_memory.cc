#include "transport/shm/cross_memory.h"

#include <sys/uio.h>

#include <cerrno>

namespace weft::transport {

int read_process_memory(pid_t pid, uint64_t remote, void* local, std::size_t bytes) {
  auto* target = static_cast<char*>(local);
  while (bytes > 0) {
    iovec mine{target, bytes};
    iovec theirs{reinterpret_cast<void*>(remote), bytes};
    ssize_t copied = process_vm_readv(pid, &mine, 1, &theirs, 1, 0);
    if (copied < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (copied == 0) return EFAULT;
    target += copied;
    remote += static_cast<uint64_t>(copied);
    bytes -= static_cast<std::size_t>(copied);
  }
  return 0;
}

int probe_process_memory(pid_t pid, uint64_t remote, uint64_t expected) {
  uint64_t seen = 0;
  if (int error = read_process_memory(pid, remote, &seen, sizeof seen)) return error;
  return seen == expected ? 0 : EIO;
}

}  // namespace weft::transport
