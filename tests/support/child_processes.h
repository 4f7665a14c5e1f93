// Starts test rank processes with their own environment and output files, waits for them with
// a deadline, and kills whatever is left: the multi-process tier never leaves an orphan or
// hangs CI.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/temp_paths.h"

namespace weft::testing {

struct ChildResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  bool timed_out = false;
  std::string out;
  std::string err;
};

class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv,
               const std::map<std::string, std::string>& env) {
    std::string base = unique_temp_path("test");
    out_path_ = base + ".out";
    err_path_ = base + ".err";
    pid_ = fork();
    if (pid_ == 0) {
      for (const auto& [key, value] : env) setenv(key.c_str(), value.c_str(), 1);
      if (!freopen(out_path_.c_str(), "w", stdout) || !freopen(err_path_.c_str(), "w", stderr))
        _exit(126);
      std::vector<char*> args;
      for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ~ChildProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    unlink(out_path_.c_str());
    unlink(err_path_.c_str());
  }

  pid_t pid() const { return pid_; }
  void signal(int sig) { kill(pid_, sig); }

  ChildResult wait(std::chrono::milliseconds limit) {
    ChildResult result;
    auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (!reaped_) {
      pid_t done = waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        reaped_ = true;
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        result.timed_out = true;
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        reaped_ = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
    result.out = slurp(out_path_);
    result.err = slurp(err_path_);
    return result;
  }

 private:
  static std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  pid_t pid_ = -1;
  bool reaped_ = false;
  std::string out_path_;
  std::string err_path_;
};

}  // namespace weft::testing
