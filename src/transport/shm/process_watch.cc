#include "transport/shm/process_watch.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace weft::transport {

ProcessWatch::ProcessWatch(pid_t pid) : pid_(pid) {
  if (pid <= 0 || pid == getpid()) return;
#ifdef SYS_pidfd_open
  pidfd_.reset(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
#endif
}

bool ProcessWatch::exited() const {
  if (pid_ <= 0 || pid_ == getpid()) return false;
  if (pidfd_.valid()) {
    pollfd entry{pidfd_.get(), POLLIN, 0};
    return ::poll(&entry, 1, 0) > 0 && (entry.revents & (POLLIN | POLLHUP | POLLERR));
  }
  return kill(pid_, 0) != 0 && errno == ESRCH;
}

}  // namespace weft::transport
