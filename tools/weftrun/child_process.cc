#include "child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "orphan_guard.h"
#include "signal_relay.h"

namespace weft::run {
namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void make_pipe(int fds[2]) {
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw SpawnError(std::string("pipe2: ") + std::strerror(errno));
  }
}

// Child side between fork and exec: async-signal-safe calls only.
[[noreturn]] void exec_child(char* const* argv, char* const* envp, int stdin_fd, int stdout_fd,
                             int stderr_fd, int error_fd, pid_t parent, const cpu_set_t* cpus,
                             const OrphanGuard* orphan_guard) {
  ::setpgid(0, 0);
  // At once: the guard cannot see weftrun die while this child holds its copy of the guard's
  // pipe, so it learns of this group whenever weftrun dies.
  if (orphan_guard) orphan_guard->watch_own_group_from_child();
  if (cpus) ::sched_setaffinity(0, sizeof *cpus, cpus);  // a refusal leaves the rank unbound
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(127);  // the launcher died before prctl took effect
  SignalRelay::reset_signals_in_child();
  if (stdin_fd >= 0) ::dup2(stdin_fd, 0);
  if (stdout_fd >= 0) ::dup2(stdout_fd, 1);
  if (stderr_fd >= 0) ::dup2(stderr_fd, 2);
  ::execvpe(argv[0], argv, envp);
  int error = errno;
  ssize_t ignored = ::write(error_fd, &error, sizeof error);
  (void)ignored;
  ::_exit(127);
}

}  // namespace

ChildProcess ChildProcess::spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) throw SpawnError("no program given");

  // Everything the child needs is built before fork: no allocation after it.
  std::vector<char*> argv;
  for (const std::string& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& entry : spec.environment)
    envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);

  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  int error_pipe[2] = {-1, -1};
  int stdin_fd = -1;
  auto close_all = [&] {
    for (int* fd : {&out_pipe[0], &out_pipe[1], &err_pipe[0], &err_pipe[1], &error_pipe[0],
                    &error_pipe[1], &stdin_fd}) {
      close_fd(*fd);
    }
  };
  try {
    if (spec.capture_output) {
      make_pipe(out_pipe);
      make_pipe(err_pipe);
    }
    make_pipe(error_pipe);
    if (!spec.inherit_stdin && spec.stdin_fd >= 0) {
      // A copy, so that the parent's close below never closes the caller's fd.
      stdin_fd = ::fcntl(spec.stdin_fd, F_DUPFD_CLOEXEC, 0);
      if (stdin_fd < 0) throw SpawnError(std::string("dup: ") + std::strerror(errno));
    } else if (!spec.inherit_stdin) {
      stdin_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (stdin_fd < 0) throw SpawnError(std::string("open /dev/null: ") + std::strerror(errno));
    }
  } catch (...) {
    close_all();
    throw;
  }

  pid_t parent = ::getpid();
  pid_t pid;
  {
    SignalBlock block;  // the child must not run weftrun's handlers before exec
    pid = ::fork();
    if (pid == 0) {
      exec_child(argv.data(), envp.data(), stdin_fd, out_pipe[1], err_pipe[1], error_pipe[1],
                 parent, spec.cpus ? &*spec.cpus : nullptr, spec.orphan_guard);
    }
  }
  if (pid < 0) {
    int error = errno;
    close_all();
    throw SpawnError(std::string("fork: ") + std::strerror(error));
  }
  ::setpgid(pid, pid);  // also here, so the group exists before we might signal it

  close_fd(out_pipe[1]);
  close_fd(err_pipe[1]);
  close_fd(error_pipe[1]);
  close_fd(stdin_fd);

  // EOF: exec succeeded (the close-on-exec write end vanished). An int: exec's errno.
  int exec_errno = 0;
  ssize_t n;
  do {
    n = ::read(error_pipe[0], &exec_errno, sizeof exec_errno);
  } while (n < 0 && errno == EINTR);
  close_fd(error_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof exec_errno)) {
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    close_all();
    throw SpawnError("cannot run '" + spec.argv[0] + "': " + std::strerror(exec_errno));
  }

  ChildProcess child;
  child.pid_ = pid;
  child.stdout_fd_ = out_pipe[0];
  child.stderr_fd_ = err_pipe[0];
  for (int fd : {child.stdout_fd_, child.stderr_fd_}) {
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_),
      stdout_fd_(other.stdout_fd_),
      stderr_fd_(other.stderr_fd_),
      reaped_(other.reaped_),
      status_(other.status_) {
  other.pid_ = -1;
  other.stdout_fd_ = -1;
  other.stderr_fd_ = -1;
  other.reaped_ = true;
}

ChildProcess::~ChildProcess() {
  close_stdout();
  close_stderr();
  // Never leave a rank behind: the launcher reaps every child before it exits, this is the
  // last line of defence when it unwinds on an exception.
  if (pid_ > 0 && !reaped_) {
    signal_group(SIGKILL);
    int status;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

void ChildProcess::close_stdout() { close_fd(stdout_fd_); }
void ChildProcess::close_stderr() { close_fd(stderr_fd_); }

void ChildProcess::signal_group(int signo) const {
  if (pid_ <= 0) return;
  // The group id stays reserved while any member lives, so this never hits a stranger.
  if (::kill(-pid_, signo) != 0 && !reaped_) ::kill(pid_, signo);
}

bool ChildProcess::try_reap() {
  if (reaped_ || pid_ <= 0) return true;
  int status;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    reaped_ = true;
    status_ = status;
  }
  return reaped_;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int signo = WTERMSIG(status);
    const char* abbrev = ::sigabbrev_np(signo);
    return "was killed by signal " + std::to_string(signo) +
           (abbrev != nullptr ? std::string(" (SIG") + abbrev + ")" : std::string());
  }
  return "ended with status " + std::to_string(status);
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

bool succeeded(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

}  // namespace weft::run
