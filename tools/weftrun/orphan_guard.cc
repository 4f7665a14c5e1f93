#include "orphan_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "signal_relay.h"

namespace weft::run {
namespace {

using Clock = std::chrono::steady_clock;

// One record on the pipe: the id of a process group to watch, or kJobOver. Four bytes, far below
// PIPE_BUF, so records that weftrun and its rank children write at once never interleave.
using Record = std::int32_t;
constexpr Record kJobOver = 0;

// During the grace period the watchdog checks this often whether the groups have emptied: it
// leaves as soon as they have, and never signals an id it has seen free (a stranger may get it).
constexpr std::chrono::milliseconds kEmptyCheckInterval{50};
// The watchdog leaves at once when told the job is over; this only bounds the wait for it should
// someone have stopped it (SIGSTOP).
constexpr std::chrono::milliseconds kWatchdogExitLimit{2000};

// What a terminal sends (Ctrl-C, Ctrl-\, Ctrl-Z, hang-up, background I/O), and SIGTERM: a kill of
// the whole job must reach weftrun, which stops the ranks itself, and must not take the watchdog
// first in case weftrun is killed harder a moment later.
constexpr int kIgnoredByWatchdog[] = {SIGINT,  SIGQUIT, SIGTSTP, SIGHUP,
                                      SIGTTIN, SIGTTOU, SIGTERM, SIGPIPE};

// The rest of this namespace runs in the watchdog: a forked copy of weftrun that never execs.
// weftrun may have threads by then (the store's), so only async-signal-safe calls: no allocation.

// read_fd is above 2 (the constructor sees to it), so the /dev/null redirections spare it.
void detach_from_weftrun(int read_fd) {
  for (int signo : kIgnoredByWatchdog) ::signal(signo, SIG_IGN);
  ::signal(SIGCHLD, SIG_DFL);  // weftrun's handler would write into weftrun's self-pipe
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  // A session of its own: no terminal's signal reaches it, nor a kill of weftrun's process group.
  ::setsid();
  ::prctl(PR_SET_NAME, "weft-guard");
  int ignored = ::chdir("/");  // keeps no file system busy
  (void)ignored;

  // Only the pipe stays open. weftrun's other descriptors (its stdout, maybe a pipe into `tee`;
  // the store's listening socket) would otherwise stay open as long as the watchdog lives.
  int null_fd = ::open("/dev/null", O_RDWR);
  for (int fd = 0; fd <= 2 && null_fd >= 0; ++fd) ::dup2(null_fd, fd);
  if (read_fd > 3) ::close_range(3, static_cast<unsigned>(read_fd) - 1, 0);
  ::close_range(static_cast<unsigned>(read_fd) + 1, ~0u, 0);
}

// Collects the process groups that ranks announce until the pipe reports end-of-file (or fails:
// then nobody can reach the watchdog any more either), and returns how many. Exits the process
// on "job over".
std::size_t collect_groups_until_weftrun_is_gone(int read_fd, pid_t* groups, std::size_t capacity) {
  std::size_t count = 0;
  Record record = kJobOver;
  std::size_t have = 0;
  for (;;) {
    ssize_t n = ::read(read_fd, reinterpret_cast<char*>(&record) + have, sizeof record - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return count;
    have += static_cast<std::size_t>(n);
    if (have < sizeof record) continue;
    have = 0;
    if (record == kJobOver) ::_exit(0);
    // kill(-1, ...) signals every process we may signal: 1 or less is never a rank's group.
    if (record > 1 && count < capacity) groups[count++] = record;
  }
}

// Keeps the groups that still have a member; returns how many.
std::size_t drop_empty_groups(pid_t* groups, std::size_t count) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (::kill(-groups[i], 0) == 0) groups[kept++] = groups[i];
  }
  return kept;
}

void stop_groups(pid_t* groups, std::size_t count, std::chrono::milliseconds grace) {
  for (std::size_t i = 0; i < count; ++i) ::kill(-groups[i], SIGTERM);
  // At most grace / kEmptyCheckInterval + 1 passes.
  const Clock::time_point kill_at = Clock::now() + grace;
  for (count = drop_empty_groups(groups, count); count > 0;
       count = drop_empty_groups(groups, count)) {
    Clock::time_point now = Clock::now();
    if (now >= kill_at) break;
    std::this_thread::sleep_for(std::min<Clock::duration>(kEmptyCheckInterval, kill_at - now));
  }
  for (std::size_t i = 0; i < count; ++i) ::kill(-groups[i], SIGKILL);
}

[[noreturn]] void run_watchdog(int read_fd, int write_fd, pid_t* groups, std::size_t capacity,
                               std::chrono::milliseconds grace) {
  // First of all: while the watchdog holds a write end it would never see end-of-file.
  ::close(write_fd);
  detach_from_weftrun(read_fd);
  std::size_t count = collect_groups_until_weftrun_is_gone(read_fd, groups, capacity);
  stop_groups(groups, count, grace);
  ::_exit(0);
}

}  // namespace

OrphanGuard::OrphanGuard(std::size_t max_groups, std::chrono::milliseconds grace) {
  // Made before fork, because the watchdog must not allocate.
  std::vector<pid_t> groups(std::max<std::size_t>(max_groups, 1));

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("cannot start the orphan guard: pipe2: ") +
                             std::strerror(errno));
  }
  // With weftrun's stdio closed the pipe could get fd 0, 1 or 2, where weftrun's own messages
  // and the ranks' redirections would land in it.
  for (int& fd : fds) {
    if (fd > 2) continue;
    int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    ::close(fd);
    fd = moved;
  }
  if (fds[0] < 0 || fds[1] < 0) {
    int error = errno;
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
    throw std::runtime_error(std::string("cannot start the orphan guard: fcntl: ") +
                             std::strerror(error));
  }

  pid_t pid;
  {
    SignalBlock block;  // the watchdog must never run weftrun's signal handlers
    pid = ::fork();
    if (pid == 0) run_watchdog(fds[0], fds[1], groups.data(), groups.size(), grace);
  }
  if (pid < 0) {
    int error = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(std::string("cannot start the orphan guard: fork: ") +
                             std::strerror(error));
  }
  ::close(fds[0]);
  write_fd_ = fds[1];
  watchdog_pid_ = pid;
}

OrphanGuard::~OrphanGuard() { job_over(); }

void OrphanGuard::watch_own_group_from_child() const {
  if (write_fd_ < 0) return;
  Record group = ::getpgrp();
  ssize_t n;
  do {
    n = ::write(write_fd_, &group, sizeof group);
  } while (n < 0 && errno == EINTR);
  // A watchdog already gone makes the write fail and leaves a SIGPIPE pending (signals are
  // blocked here), which would kill the rank once they are unblocked. Setting SIG_IGN discards
  // it; the child resets SIGPIPE to the default before exec anyway.
  if (n < 0) ::signal(SIGPIPE, SIG_IGN);
  ::close(write_fd_);
}

void OrphanGuard::job_over() {
  if (write_fd_ < 0) return;
  Record record = kJobOver;
  ssize_t n;
  do {
    n = ::write(write_fd_, &record, sizeof record);
  } while (n < 0 && errno == EINTR);
  // If the write failed the watchdog is gone already: nothing is left to tell or to wait for
  // except its exit status.
  ::close(write_fd_);
  write_fd_ = -1;

  const Clock::time_point give_up_at = Clock::now() + kWatchdogExitLimit;
  for (;;) {
    int status;
    pid_t reaped = ::waitpid(watchdog_pid_, &status, WNOHANG);
    if (reaped == watchdog_pid_ || (reaped < 0 && errno != EINTR)) break;
    if (Clock::now() >= give_up_at) {
      ::kill(watchdog_pid_, SIGKILL);
      while (::waitpid(watchdog_pid_, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  watchdog_pid_ = -1;
}

}  // namespace weft::run
