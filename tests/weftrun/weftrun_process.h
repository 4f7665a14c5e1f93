// weftrun_process.h — the weftrun binary run as a test's child: its stdout and stderr captured
// in files, every wait bounded (a weftrun still running at its deadline is killed and the test
// fails), so a bug never hangs the suite. Shared by the weftrun tests.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/eventually.h"

namespace weft::testing {

using namespace std::chrono_literals;

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// One weftrun process with stdout and stderr captured in files (no pipe to drain, so no
// deadlock however much it writes).
class Weftrun {
 public:
  using Clock = std::chrono::steady_clock;

  Weftrun(const std::vector<std::string>& args, const std::filesystem::path& dir,
          const std::string& name = "weftrun", const std::map<std::string, std::string>& env = {},
          bool clear_token = true)
      : out_path_(dir / (name + ".out")), err_path_(dir / (name + ".err")) {
    std::vector<std::string> argv = {WEFTRUN_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(out, 1);
      ::dup2(err, 2);
      if (clear_token) ::unsetenv("WEFT_JOB_TOKEN");
      for (const auto& [key, value] : env) ::setenv(key.c_str(), value.c_str(), 1);
      std::vector<char*> raw;
      for (auto& arg : argv) raw.push_back(arg.data());
      raw.push_back(nullptr);
      ::execv(raw[0], raw.data());
      ::_exit(126);
    }
    started_ = Clock::now();
  }

  ~Weftrun() {
    if (pid_ > 0 && !done_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  // Waits until weftrun exits or the deadline passes (then kills it and fails the test).
  // Returns the exit code, 128 + signal when killed by a signal, -1 on timeout.
  int wait(std::chrono::milliseconds limit) {
    auto deadline = Clock::now() + limit;
    while (!done_) {
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        done_ = true;
        elapsed_ = Clock::now() - started_;
        code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (Clock::now() >= deadline) {
        ADD_FAILURE() << "weftrun still running after " << limit.count()
                      << " ms; killing it\nstderr:\n"
                      << err();
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        done_ = true;
        code_ = -1;
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    return code_;
  }

  pid_t pid() const { return pid_; }
  std::string out() const { return read_file(out_path_); }
  std::string err() const { return read_file(err_path_); }
  double seconds() const { return std::chrono::duration<double>(elapsed_).count(); }

 private:
  std::filesystem::path out_path_;
  std::filesystem::path err_path_;
  pid_t pid_ = -1;
  bool done_ = false;
  int code_ = -1;
  Clock::time_point started_;
  Clock::duration elapsed_{};
};

}  // namespace weft::testing
