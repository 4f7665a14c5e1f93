// A TcpStoreServer in a process of its own, which a test can stop (SIGSTOP) to play a store
// server out of reach, and which dies with the test object.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include "weft/tcp_store_server.h"

namespace weft::testing {

class StoreServerProcess {
 public:
  StoreServerProcess() {
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(pipe_fds[0]);
      TcpStoreServer::Options options;
      options.host = "127.0.0.1";
      TcpStoreServer server(options);
      int port = server.port();
      if (::write(pipe_fds[1], &port, sizeof port) != sizeof port) ::_exit(1);
      for (;;) ::pause();
    }
    ::close(pipe_fds[1]);
    if (::read(pipe_fds[0], &port_, sizeof port_) != sizeof port_) port_ = -1;
    ::close(pipe_fds[0]);
    if (pid_ < 0 || port_ < 0) throw std::runtime_error("the store server process did not start");
  }
  ~StoreServerProcess() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  StoreServerProcess(const StoreServerProcess&) = delete;
  StoreServerProcess& operator=(const StoreServerProcess&) = delete;

  int port() const { return port_; }
  // Returns once the server is stopped: the signal alone may leave it a moment to answer.
  void stop() {
    ::kill(pid_, SIGSTOP);
    for (int i = 0; i < 1000 && state() != 'T'; ++i) ::usleep(1000);
  }
  void resume() { ::kill(pid_, SIGCONT); }

 private:
  // The process state letter of /proc/<pid>/stat ('T': stopped).
  char state() const {
    std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
    std::string line;
    std::getline(stat, line);
    std::size_t close = line.rfind(')');
    return close != std::string::npos && close + 2 < line.size() ? line[close + 2] : '?';
  }

  pid_t pid_ = -1;
  int port_ = -1;
};

}  // namespace weft::testing
