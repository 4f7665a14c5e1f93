#include "signal_relay.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace weft::run {
namespace {

// The handler runs on whichever thread the signal lands on (the store server's, say), possibly
// while the main thread tears the relay down: it takes the write end once, counted as running,
// and the destructor closes the pipe only once the write end is withdrawn and no handler is
// between taking it and writing (else a late signal could write into a descriptor reused by
// then).
std::atomic<int> g_write_fd{-1};
std::atomic<int> g_handlers_running{0};
static_assert(std::atomic<int>::is_always_lock_free, "used from a signal handler");
int g_read_fd = -1;

void on_signal(int signo) {
  int saved = errno;
  g_handlers_running.fetch_add(1);
  if (int fd = g_write_fd.load(); fd >= 0) {
    unsigned char byte = static_cast<unsigned char>(signo);
    // Non-blocking: when the pipe is full the loop is awake anyway.
    ssize_t ignored = ::write(fd, &byte, 1);
    (void)ignored;
  }
  g_handlers_running.fetch_sub(1);
  errno = saved;
}

// SIGHUP too: a closed terminal or a killed ssh session must stop the job, not leave its ranks
// and what they started behind.
constexpr int kCaught[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};

}  // namespace

std::string signal_name(int signo) {
  const char* abbrev = ::sigabbrev_np(signo);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(signo);
}

void SignalRelay::install() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  }
  g_read_fd = fds[0];
  g_write_fd.store(fds[1]);

  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signo : kCaught) {
    struct sigaction a = action;
    if (signo == SIGCHLD) a.sa_flags |= SA_NOCLDSTOP;
    ::sigaction(signo, &a, nullptr);
  }
  ::signal(SIGPIPE, SIG_IGN);
}

SignalRelay::~SignalRelay() {
  if (g_read_fd < 0) return;
  for (int signo : kCaught) ::signal(signo, SIG_DFL);
  const int write_fd = g_write_fd.exchange(-1);
  // A handler past its load is one write() of a byte away from done.
  while (g_handlers_running.load() != 0) sched_yield();
  ::close(g_read_fd);
  ::close(write_fd);
  g_read_fd = -1;
}

int SignalRelay::fd() const { return g_read_fd; }

int SignalRelay::take_termination_signal() {
  int result = 0;
  unsigned char buffer[64];
  for (;;) {
    ssize_t n = ::read(g_read_fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (buffer[i] == SIGINT || buffer[i] == SIGTERM || buffer[i] == SIGHUP) result = buffer[i];
    }
  }
  return result;
}

void SignalRelay::reset_signals_in_child() {
  for (int signo : kCaught) ::signal(signo, SIG_DFL);
  // SIG_IGN survives exec; the program must get the default SIGPIPE.
  ::signal(SIGPIPE, SIG_DFL);
  sigset_t empty;
  sigemptyset(&empty);
  ::sigprocmask(SIG_SETMASK, &empty, nullptr);
}

SignalBlock::SignalBlock() {
  sigset_t all;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &saved_mask_);
}

SignalBlock::~SignalBlock() { ::pthread_sigmask(SIG_SETMASK, &saved_mask_, nullptr); }

}  // namespace weft::run
