#include "rank_supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "core_binding.h"
#include "weft/error.h"

extern char** environ;

namespace weft::run {
namespace {

std::string ranks_phrase(int count, const char* adjective) {
  if (count == 1) return std::string("the ") + adjective + (adjective[0] ? " " : "") + "rank";
  return std::string("the ") + adjective + (adjective[0] ? " " : "") + std::to_string(count) +
         " ranks";
}

}  // namespace

// A file a rank's stream is copied to; closed with the Rank (outside the anonymous namespace:
// RankSupervisor::Rank, a class with linkage, holds one).
class OutputFile {
 public:
  explicit OutputFile(const std::filesystem::path& path)
      : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) {
    if (fd_ < 0) {
      throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno));
    }
  }
  ~OutputFile() { ::close(fd_); }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  // NOTE(weftrun-output-dir): a failed write (disk full) is dropped like a closed terminal;
  // the job keeps running.
  void write(const char* data, std::size_t size) { write_fully(fd_, data, size); }

 private:
  int fd_;
};

struct RankSupervisor::Rank {
  int local_rank = 0;
  int global_rank = 0;
  std::unique_ptr<ChildProcess> child;
  std::unique_ptr<LinePrefixer> out;
  std::unique_ptr<LinePrefixer> err;
  std::unique_ptr<OutputFile> out_file;  // with an output directory only
  std::unique_ptr<OutputFile> err_file;
};

RankSupervisor::RankSupervisor(SupervisorOptions options, JobLayout layout, SignalRelay& signals,
                               NodeRendezvous* rendezvous)
    : options_(std::move(options)),
      layout_(std::move(layout)),
      signals_(signals),
      rendezvous_(rendezvous) {}

RankSupervisor::~RankSupervisor() = default;

void RankSupervisor::open_output_files() {
  if (options_.output_dir.empty()) return;
  for (auto& rank : ranks_) {
    std::filesystem::path dir =
        std::filesystem::path(options_.output_dir) / ("rank" + std::to_string(rank->global_rank));
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error) {
      throw std::runtime_error("cannot create " + dir.string() + " for rank " +
                               std::to_string(rank->global_rank) + "'s output: " + error.message());
    }
    rank->out_file = std::make_unique<OutputFile>(dir / "stdout");
    rank->err_file = std::make_unique<OutputFile>(dir / "stderr");
  }
}

void RankSupervisor::spawn_all() {
  auto slices =
      bind_slices(parse_bind_policy(options_.bind), layout_.nproc_per_node, available_cpus());
  for (auto& rank : ranks_) {
    const int local = rank->local_rank;
    SpawnSpec spec;
    spec.argv = options_.command;
    spec.environment = rank_environment(layout_, local, environ);
    spec.capture_output =
        options_.prefix_output || options_.timestamp || !options_.output_dir.empty();
    // NOTE(weftrun-stdin): every rank reads /dev/null. Ranks run in their own process groups,
    // so one reading the terminal would be stopped with SIGTTIN.
    spec.inherit_stdin = false;
    spec.cpus = slices[local];
    spec.orphan_guard = orphan_guard_.get();
    rank->child = std::make_unique<ChildProcess>(ChildProcess::spawn(spec));
  }
}

int RankSupervisor::running_count() const {
  return static_cast<int>(std::count_if(ranks_.begin(), ranks_.end(),
                                        [](const auto& rank) { return !rank->child->reaped(); }));
}

void RankSupervisor::pump_output(Rank& rank, int fd, bool drain) {
  bool is_out = fd == rank.child->stdout_fd();
  LinePrefixer& prefixer = is_out ? *rank.out : *rank.err;
  OutputFile* file = is_out ? rank.out_file.get() : rank.err_file.get();
  char buffer[kPipeReadChunk];
  std::size_t total = 0;
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      prefixer.feed(buffer, static_cast<std::size_t>(n));
      if (file != nullptr) file->write(buffer, static_cast<std::size_t>(n));
      total += static_cast<std::size_t>(n);
      // One chunk per wake-up keeps a chatty rank from starving the others.
      if (!drain || total >= kPipeDrainLimit) return;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // EOF or a read error: this stream is over.
    prefixer.finish();
    if (is_out) {
      rank.child->close_stdout();
    } else {
      rank.child->close_stderr();
    }
    return;
  }
}

void RankSupervisor::on_rank_exit(Rank& rank) {
  // Everything the rank wrote before exiting is in the pipes now: forward it, then close them
  // (a grandchild holding the write ends must not keep weftrun waiting).
  for (int fd : {rank.child->stdout_fd(), rank.child->stderr_fd()}) {
    if (fd >= 0) pump_output(rank, fd, /*drain=*/true);
  }
  rank.out->finish();
  rank.err->finish();
  rank.child->close_stdout();
  rank.child->close_stderr();

  int status = rank.child->wait_status();
  if (succeeded(status) || stopping_) return;

  std::string what = "rank " + std::to_string(rank.global_rank) + " (" +
                     (layout_.nnodes > 1 ? node_phrase() + ", " : "") + "pid " +
                     std::to_string(rank.child->pid()) + ") " + describe_wait_status(status);
  int others = running_count();
  print_launcher_line(what + (others > 0 ? "; stopping " + ranks_phrase(others, "other") : ""));
  fail_here(JobFailure{exit_code_of(status), what});
  begin_stop(options_.failure_grace, SIGTERM);
}

void RankSupervisor::on_signal(int signo) {
  int running = running_count();
  if (stopping_) {
    // Asked again: no more patience.
    if (!killed_ && running > 0) {
      print_launcher_line("received " + signal_name(signo) + " again; killing " +
                          ranks_phrase(running, ""));
    }
    for (auto& rank : ranks_) {
      if (!rank->child->reaped()) rank->child->signal_group(SIGKILL);
    }
    killed_ = true;
    return;
  }
  result_.signal = signo;
  std::string what = (layout_.nnodes > 1 ? "weftrun of " + node_phrase() : std::string("weftrun")) +
                     " received " + signal_name(signo);
  print_launcher_line("received " + signal_name(signo) + "; forwarding it to " +
                      ranks_phrase(running, ""));
  fail_here(JobFailure{128 + signo, what});
  begin_stop(options_.signal_grace, signo);
}

void RankSupervisor::check_job_failure() {
  next_store_poll_ = Clock::now() + options_.store_poll_interval;
  std::optional<JobFailure> failure;
  try {
    failure = rendezvous_->poll_failure();
  } catch (const std::exception& error) {
    failure = JobFailure{
        1, "lost the job's store at " + rendezvous_->address() + " (" + error.what() + ")"};
  }
  if (!failure) return;
  int running = running_count();
  print_launcher_line("stopping " + ranks_phrase(running, "") + " of " + node_phrase() + ": " +
                      failure->line);
  result_.exit_code = failure->exit_code;
  result_.failure = failure;
  begin_stop(options_.failure_grace, SIGTERM);
}

void RankSupervisor::on_time_limit() {
  int running = running_count();
  std::string what = "the job ran past its time limit (--timeout " + options_.time_limit_text +
                     (layout_.nnodes > 1 ? ", " + node_phrase() : "") + ")";
  print_launcher_line(what + "; stopping " + ranks_phrase(running, ""));
  fail_here(JobFailure{kTimeLimitExitCode, what});
  begin_stop(options_.failure_grace, SIGTERM);
}

void RankSupervisor::on_stdin_readable() {
  char buffer[256];
  ssize_t n = ::read(0, buffer, sizeof buffer);
  if (n > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN))) return;  // not the end
  watch_stdin_ = false;
  if (stopping_) return;
  int running = running_count();
  std::string what =
      "the launcher of " + node_phrase() + " closed its stdin (it is stopping the job, or gone)";
  print_launcher_line(what + "; stopping " + ranks_phrase(running, ""));
  fail_here(JobFailure{128 + SIGHUP, what});
  begin_stop(options_.signal_grace, SIGTERM);
}

std::string RankSupervisor::node_phrase() const {
  std::string node = "node " + std::to_string(layout_.node_rank);
  return options_.node_host.empty() ? node : node + " on " + options_.node_host;
}

void RankSupervisor::fail_here(JobFailure failure) {
  result_.exit_code = failure.exit_code;
  result_.failure = std::move(failure);
  result_.failed_here = true;
  if (rendezvous_ == nullptr) return;
  try {
    rendezvous_->publish_failure(*result_.failure);
  } catch (const std::exception& error) {
    // The other nodes still notice this node's ranks going, only later.
    print_launcher_line(std::string("cannot tell the other nodes: ") + error.what());
  }
}

void RankSupervisor::begin_stop(std::chrono::milliseconds grace, int signo) {
  stopping_ = true;
  kill_at_ = Clock::now() + grace;
  for (auto& rank : ranks_) {
    if (!rank->child->reaped()) rank->child->signal_group(signo);
  }
}

void RankSupervisor::finish_stop_if_due() {
  if (!stopping_ || killed_ || Clock::now() < kill_at_) return;
  killed_ = true;
  int running = running_count();
  if (running == 0) return;
  print_launcher_line(std::to_string(running) + (running == 1 ? " rank is" : " ranks are") +
                      " still running after the grace period; killing them");
  for (auto& rank : ranks_) {
    if (!rank->child->reaped()) rank->child->signal_group(SIGKILL);
  }
}

int RankSupervisor::poll_timeout_ms() const {
  auto now = Clock::now();
  auto timeout = std::chrono::milliseconds(1000);  // a safety net; SIGCHLD wakes us anyway
  if (stopping_ && !killed_) {
    timeout =
        std::min(timeout, std::chrono::duration_cast<std::chrono::milliseconds>(kill_at_ - now));
  }
  if (rendezvous_ != nullptr && !stopping_) {
    timeout = std::min(
        timeout, std::chrono::duration_cast<std::chrono::milliseconds>(next_store_poll_ - now));
  }
  if (time_limit_at_ && !stopping_) {
    timeout = std::min(
        timeout, std::chrono::duration_cast<std::chrono::milliseconds>(*time_limit_at_ - now));
  }
  return static_cast<int>(std::max<std::chrono::milliseconds::rep>(timeout.count() + 1, 0));
}

SupervisorResult RankSupervisor::run() {
  next_store_poll_ = Clock::now() + options_.store_poll_interval;
  // weftrun dying of a signal it cannot catch is still weftrun stopped by a signal: same grace.
  for (int local = 0; local < layout_.nproc_per_node; ++local) {
    auto rank = std::make_unique<Rank>();
    rank->local_rank = local;
    rank->global_rank = layout_.global_rank(local);
    std::string prefix =
        options_.prefix_output ? "[rank " + std::to_string(rank->global_rank) + "] " : "";
    rank->out = std::make_unique<LinePrefixer>(prefix, 1, options_.timestamp);
    rank->err = std::make_unique<LinePrefixer>(prefix, 2, options_.timestamp);
    ranks_.push_back(std::move(rank));
  }
  // Before any rank starts: a directory that cannot be written stops the launch (exit 1).
  open_output_files();
  orphan_guard_ = std::make_unique<OrphanGuard>(layout_.nproc_per_node, options_.signal_grace);
  if (options_.time_limit) time_limit_at_ = Clock::now() + *options_.time_limit;
  try {
    spawn_all();
  } catch (const SpawnError& error) {
    // The ranks after the one that could not start never will.
    std::erase_if(ranks_, [](const auto& rank) { return rank->child == nullptr; });
    print_launcher_line(error.what());
    fail_here(JobFailure{127, node_phrase() + ": " + error.what()});
    begin_stop(options_.failure_grace, SIGTERM);
  }

  watch_stdin_ = options_.stop_on_stdin_close;
  std::vector<pollfd> fds;
  std::vector<Rank*> owners;
  while (running_count() > 0) {
    fds.clear();
    owners.clear();
    fds.push_back({signals_.fd(), POLLIN, 0});
    owners.push_back(nullptr);
    // Last in the list (after the ranks' fds) when watched; -1 makes poll skip the slot.
    const pollfd stdin_slot{watch_stdin_ ? 0 : -1, POLLIN, 0};
    for (auto& rank : ranks_) {
      for (int fd : {rank->child->stdout_fd(), rank->child->stderr_fd()}) {
        if (fd < 0) continue;
        fds.push_back({fd, POLLIN, 0});
        owners.push_back(rank.get());
      }
    }
    fds.push_back(stdin_slot);
    owners.push_back(nullptr);
    int ready = ::poll(fds.data(), fds.size(), poll_timeout_ms());
    if (ready < 0 && errno != EINTR) {
      print_launcher_line(std::string("poll: ") + std::strerror(errno));
      break;  // the destructors of the ranks kill and reap them
    }
    if (ready > 0) {
      if (fds[0].revents != 0) {
        int signo = signals_.take_termination_signal();
        if (signo != 0) on_signal(signo);
      }
      for (std::size_t i = 1; i + 1 < fds.size(); ++i) {
        if (fds[i].revents != 0) pump_output(*owners[i], fds[i].fd, /*drain=*/false);
      }
      if (fds.back().fd >= 0 && fds.back().revents != 0) on_stdin_readable();
    }
    for (auto& rank : ranks_) {
      if (!rank->child->reaped() && rank->child->try_reap()) on_rank_exit(*rank);
    }
    if (rendezvous_ != nullptr && !stopping_ && Clock::now() >= next_store_poll_)
      check_job_failure();
    if (time_limit_at_ && !stopping_ && Clock::now() >= *time_limit_at_) on_time_limit();
    finish_stop_if_due();
  }

  if (stopping_) {
    // Whatever a stopped rank left behind in its process group goes with it.
    for (auto& rank : ranks_) rank->child->signal_group(SIGKILL);
  }
  // After a poll failure ranks may still run: then the destructor says it, after theirs.
  if (running_count() == 0) orphan_guard_->job_over();
  return result_;
}

}  // namespace weft::run
