#include "host_launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "child_process.h"
#include "line_prefixer.h"
#include "local_host.h"
#include "store_host.h"
#include "util/random_token.h"

extern char** environ;

namespace weft::run {
namespace {

// After one agent ends in failure the others normally stop within a few seconds, told by the
// store (an agent's failure grace is 3 s, and node 0 lingers up to 10 s for the rest); longer
// than that, an agent is not hearing the store (e.g. it never joined) and is stopped.
constexpr std::chrono::milliseconds kStragglerGrace{15'000};
// Agents given SIGTERM or a closed stdin take up to their own 5 s signal grace to stop ranks;
// whatever still runs after this is killed (for a remote node: its remote shell).
constexpr std::chrono::milliseconds kStopGrace{8'000};

std::string self_path() {
  std::error_code error;
  std::filesystem::path path = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? "weftrun" : path.string();
}

std::string working_dir() {
  std::error_code error;
  std::filesystem::path path = std::filesystem::current_path(error);
  return error ? "." : path.string();
}

// As main.cc's for a job started node by node: the flag, the environment, else a fresh one.
std::string job_token_for(const LaunchOptions& options) {
  if (!options.job_token.empty()) return options.job_token;
  const char* env = std::getenv("WEFT_JOB_TOKEN");
  return env != nullptr && *env != '\0' ? env : util::random_hex(16);
}

// This process's environment with `extra`'s NAME=VALUE entries in place of the same names.
std::vector<std::string> environment_with(const std::vector<std::string>& extra) {
  std::vector<std::string> environment;
  auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string text = *entry;
    bool replaced = std::any_of(extra.begin(), extra.end(),
                                [&](const std::string& e) { return name_of(e) == name_of(text); });
    if (!replaced) environment.push_back(std::move(text));
  }
  environment.insert(environment.end(), extra.begin(), extra.end());
  return environment;
}

}  // namespace

struct HostLauncher::Node {
  int rank = 0;
  std::string host;
  bool remote = true;
  std::unique_ptr<ChildProcess> child;
  std::unique_ptr<LinePrefixer> out;
  std::unique_ptr<LinePrefixer> err;
  int stdin_write_fd = -1;  // closing it tells the agent to stop

  void close_stdin() {
    if (stdin_write_fd >= 0) ::close(stdin_write_fd);
    stdin_write_fd = -1;
  }
  ~Node() { close_stdin(); }
};

HostLauncher::HostLauncher(LaunchOptions options, SignalRelay& signals)
    : options_(std::move(options)), signals_(signals) {
  for (int rank = 0; rank < options_.nnodes; ++rank) {
    auto node = std::make_unique<Node>();
    node->rank = rank;
    node->host = options_.node_hosts[static_cast<std::size_t>(rank)];
    node->remote = !is_this_host(node->host);
    node->out = std::make_unique<LinePrefixer>("", 1);
    node->err = std::make_unique<LinePrefixer>("", 2);
    nodes_.push_back(std::move(node));
  }
  const Node& first = *nodes_.front();
  const bool any_remote =
      std::any_of(nodes_.begin(), nodes_.end(), [](const auto& node) { return node->remote; });
  job_.weftrun_path = self_path();
  job_.working_dir = working_dir();
  job_.master_addr = options_.master_addr_given ? options_.master_addr : first.host;
  if (any_remote && is_loopback_only(job_.master_addr)) {
    throw UsageError("node 0 would host the job's store at '" + job_.master_addr +
                     "', which is loopback: the other hosts cannot reach it there; list this "
                     "host by a name or address they can reach, or give --master-addr");
  }
  // A store on this host can have a port known free; another host's gets the usual default.
  job_.master_port =
      !first.remote && !options_.master_port_given ? pick_free_port() : options_.master_port;
  job_.job_token = job_token_for(options_);
  job_.environment = node_environment(environ, options_.exports, job_.job_token);
}

HostLauncher::~HostLauncher() = default;

void HostLauncher::start_nodes() {
  for (auto& node : nodes_) {
    std::vector<std::string> agent = node_weftrun_argv(options_, job_, node->rank);
    int stdin_pipe[2];
    if (::pipe2(stdin_pipe, O_CLOEXEC) != 0) {
      throw SpawnError(std::string("pipe2: ") + std::strerror(errno));
    }
    node->stdin_write_fd = stdin_pipe[1];
    SpawnSpec spec;
    spec.stdin_fd = stdin_pipe[0];
    if (node->remote) {
      spec.argv = remote_shell_argv(options_.rsh, node->host, remote_shell_line(job_, agent));
      // The remote shell's own environment stays ours; the agent's travels in the line.
      spec.environment = environment_with({});
    } else {
      spec.argv = agent;
      spec.environment = environment_with(job_.environment);
    }
    try {
      node->child = std::make_unique<ChildProcess>(ChildProcess::spawn(spec));
    } catch (...) {
      ::close(stdin_pipe[0]);
      throw;
    }
    ::close(stdin_pipe[0]);
  }
}

int HostLauncher::running_count() const {
  return static_cast<int>(std::count_if(nodes_.begin(), nodes_.end(), [](const auto& node) {
    return node->child != nullptr && !node->child->reaped();
  }));
}

void HostLauncher::pump_output(Node& node, int fd, bool drain) {
  bool is_out = fd == node.child->stdout_fd();
  LinePrefixer& lines = is_out ? *node.out : *node.err;
  char buffer[kPipeReadChunk];
  std::size_t total = 0;
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      lines.feed(buffer, static_cast<std::size_t>(n));
      total += static_cast<std::size_t>(n);
      if (!drain || total >= kPipeDrainLimit) return;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    lines.finish();
    if (is_out) {
      node.child->close_stdout();
    } else {
      node.child->close_stderr();
    }
    return;
  }
}

void HostLauncher::on_node_exit(Node& node) {
  for (int fd : {node.child->stdout_fd(), node.child->stderr_fd()}) {
    if (fd >= 0) pump_output(node, fd, /*drain=*/true);
  }
  node.out->finish();
  node.err->finish();
  node.child->close_stdout();
  node.child->close_stderr();
  node.close_stdin();

  int status = node.child->wait_status();
  if (succeeded(status)) return;
  if (exit_code_ == 0) exit_code_ = exit_code_of(status);
  if (stopping_) return;
  print_launcher_line("node " + std::to_string(node.rank) + " (" + node.host + ") " +
                      describe_wait_status(status));
  if (!stop_stragglers_at_) stop_stragglers_at_ = Clock::now() + kStragglerGrace;
}

void HostLauncher::on_signal(int signo) {
  if (stopping_) {
    print_launcher_line("received " + signal_name(signo) + " again; killing the nodes");
    for (auto& node : nodes_) {
      if (node->child != nullptr && !node->child->reaped()) node->child->signal_group(SIGKILL);
    }
    killed_ = true;
    return;
  }
  signal_ = signo;
  print_launcher_line("received " + signal_name(signo) + "; stopping the " +
                      std::to_string(running_count()) + " nodes");
  begin_stop(signo, kStopGrace);
}

void HostLauncher::begin_stop(int signo, std::chrono::milliseconds grace) {
  stopping_ = true;
  kill_at_ = Clock::now() + grace;
  for (auto& node : nodes_) {
    node->close_stdin();
    // A remote shell is left alone: its agent stops on the end of stdin, and what it prints
    // meanwhile still comes back through it. Killing ssh would reach nothing over there.
    if (node->child != nullptr && !node->child->reaped() && !node->remote) {
      node->child->signal_group(signo);
    }
  }
}

void HostLauncher::finish_stop_if_due() {
  if (!stopping_ && stop_stragglers_at_ && Clock::now() >= *stop_stragglers_at_) {
    print_launcher_line("stopping the " + std::to_string(running_count()) +
                        " nodes still running after another one failed");
    begin_stop(SIGTERM, kStopGrace);
    return;
  }
  if (!stopping_ || killed_ || Clock::now() < kill_at_) return;
  killed_ = true;
  for (auto& node : nodes_) {
    if (node->child != nullptr && !node->child->reaped()) node->child->signal_group(SIGKILL);
  }
}

int HostLauncher::poll_timeout_ms() const {
  auto now = Clock::now();
  auto timeout = std::chrono::milliseconds(1000);  // a safety net; SIGCHLD wakes us anyway
  auto until = [&](Clock::time_point when) {
    timeout = std::min(timeout, std::chrono::duration_cast<std::chrono::milliseconds>(when - now));
  };
  if (stopping_ && !killed_) until(kill_at_);
  if (!stopping_ && stop_stragglers_at_) until(*stop_stragglers_at_);
  return static_cast<int>(std::max<std::chrono::milliseconds::rep>(timeout.count() + 1, 0));
}

int HostLauncher::run() {
  try {
    start_nodes();
  } catch (const SpawnError& error) {
    print_launcher_line(error.what());
    exit_code_ = 127;
    begin_stop(SIGTERM, kStopGrace);
  }

  std::vector<pollfd> fds;
  std::vector<Node*> owners;
  while (running_count() > 0) {
    fds.clear();
    owners.clear();
    fds.push_back({signals_.fd(), POLLIN, 0});
    owners.push_back(nullptr);
    for (auto& node : nodes_) {
      if (node->child == nullptr) continue;
      for (int fd : {node->child->stdout_fd(), node->child->stderr_fd()}) {
        if (fd < 0) continue;
        fds.push_back({fd, POLLIN, 0});
        owners.push_back(node.get());
      }
    }
    int ready = ::poll(fds.data(), fds.size(), poll_timeout_ms());
    if (ready < 0 && errno != EINTR) {
      print_launcher_line(std::string("poll: ") + std::strerror(errno));
      break;  // the agents' destructors kill and reap them
    }
    if (ready > 0) {
      if (fds[0].revents != 0) {
        if (int signo = signals_.take_termination_signal(); signo != 0) on_signal(signo);
      }
      for (std::size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents != 0) pump_output(*owners[i], fds[i].fd, /*drain=*/false);
      }
    }
    for (auto& node : nodes_) {
      if (node->child != nullptr && !node->child->reaped() && node->child->try_reap()) {
        on_node_exit(*node);
      }
    }
    finish_stop_if_due();
  }
  if (signal_ != 0) return 128 + signal_;
  return exit_code_;
}

}  // namespace weft::run
