#include "plot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

extern char** environ;

namespace weft_bench {
namespace {

constexpr const char* kScriptName = "weft_bench_plot.py";

// The interpreters to try, in turn: $WEFT_BENCH_PYTHON alone when set; else python3 from PATH
// and then Debian's /usr/bin/python3 (python3-matplotlib's), which PATH may hide (pyenv, venv).
std::vector<std::string> interpreters() {
  const char* chosen = std::getenv("WEFT_BENCH_PYTHON");
  if (chosen != nullptr && *chosen != '\0') return {chosen};
  return {"python3", "/usr/bin/python3"};
}

// Runs interpreter with args, stdout inherited, stderr too unless quiet; empty when it exited
// 0, else what went wrong.
std::string run_python(const std::string& interpreter, const std::vector<std::string>& args,
                       bool quiet = false) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(interpreter.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(stdout);  // the table before anything the script prints
  std::fflush(stderr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int spawn_error = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawn_error != 0) {
    if (spawn_error == ENOENT) return interpreter + " not found";
    return "cannot start " + interpreter + ": " + std::strerror(spawn_error);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return std::string("waitpid: ") + std::strerror(errno);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  // posix_spawnp may report a missing program as the child's exit status 127.
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) return interpreter + " could not run";
  if (WIFEXITED(status)) {
    return interpreter + " " + args.front() + " exited with status " +
           std::to_string(WEXITSTATUS(status));
  }
  return interpreter + " " + args.front() + " was killed by signal " +
         std::to_string(WTERMSIG(status));
}

std::filesystem::path executable_dir() {
  std::error_code error;
  auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::filesystem::path() : self.parent_path();
}

}  // namespace

std::string find_plot_script() {
  namespace fs = std::filesystem;
  if (const char* chosen = std::getenv("WEFT_BENCH_PLOT_SCRIPT"); chosen && *chosen) {
    if (!fs::is_regular_file(chosen)) {
      throw std::runtime_error(std::string("--plot: WEFT_BENCH_PLOT_SCRIPT=") + chosen +
                               " is not a file");
    }
    return chosen;
  }
  std::vector<fs::path> places;
  const fs::path dir = executable_dir();
  if (!dir.empty()) {
    places.push_back(dir / kScriptName);
#ifdef WEFT_BENCH_PLOT_FROM_BINDIR
    places.push_back((dir / WEFT_BENCH_PLOT_FROM_BINDIR / kScriptName).lexically_normal());
#endif
  }
  std::string looked;
  for (const auto& p : places) {
    if (fs::is_regular_file(p)) return p.string();
    looked += (looked.empty() ? "" : ", ") + p.string();
  }
  throw std::runtime_error(std::string("--plot: ") + kScriptName + " is not where weft-bench " +
                           "looks for it (" + (looked.empty() ? "no executable path" : looked) +
                           "); set WEFT_BENCH_PLOT_SCRIPT");
}

std::string find_plot_python(const std::string& script) {
  const std::vector<std::string> candidates = interpreters();
  std::string errors;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    // The last one says why it cannot (matplotlib missing, ...) on stderr; the others are quiet.
    const bool last = i + 1 == candidates.size();
    const std::string error = run_python(candidates[i], {script, "--check"}, !last);
    if (error.empty()) return candidates[i];
    errors += (errors.empty() ? "" : "; ") + error;
  }
  throw std::runtime_error("--plot cannot draw: no Python with matplotlib (" + errors +
                           "; set WEFT_BENCH_PYTHON to one)");
}

std::string draw_plot(const std::string& python, const std::string& script,
                      const std::string& json_path, const std::string& png_path) {
  const std::string error = run_python(python, {script, json_path, "-o", png_path});
  return error.empty() ? "" : "--plot: " + error;
}

TempRowsFile::TempRowsFile() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/weft-bench-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = mkstemp(name.data());
  if (fd < 0) {
    throw std::runtime_error("--plot: cannot make a temporary file " + pattern + ": " +
                             std::strerror(errno));
  }
  close(fd);
  path_ = name.data();
}

TempRowsFile::~TempRowsFile() { unlink(path_.c_str()); }

}  // namespace weft_bench
