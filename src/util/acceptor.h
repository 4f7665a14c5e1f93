// Acceptor — takes the connections waiting on listening sockets that one epoll set watches,
// for an event loop (the TCP path's, the store server's), and rides out a shortage.
//
// Out of file descriptors (or kernel memory), accept() fails while the connection stays queued,
// so the listener stays readable and a loop that kept watching it would spin. The Acceptor then
// stops watching every listener it has for kPause, warns once per shortage (naming the process's
// RLIMIT_NOFILE; a shortage that comes and goes, at most once per 5 s), and watches them again
// once the pause has passed. A connection that its taker
// cannot adopt (out of memory) is dropped with a warning; the loop goes on.
// Thread-safety: none; used by the one thread that runs the event loop.
#pragma once

#include <sys/epoll.h>

#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "util/log.h"
#include "util/socket.h"
#include "util/warning_limiter.h"

namespace weft::util {

class Acceptor {
 public:
  using Clock = std::chrono::steady_clock;
  // How long the listeners stay unwatched once accept() ran short.
  static constexpr std::chrono::milliseconds kPause{100};

  // `who` opens the warnings ("rank 3", "store server"); `epoll_fd` outlives the Acceptor.
  Acceptor(int epoll_fd, Subsys subsys, std::string who);

  // Watches `listen_fd` (non-blocking; not owned) for connections; its events carry `data`.
  // Throws Error(kSystem) when epoll refuses it.
  void add(int listen_fd, epoll_data_t data);
  // Hands every connection waiting on `listen_fd` to `take(Fd, const SocketAddress& from)`,
  // which adopts it (non-blocking, close-on-exec), until none is left or accept() runs short
  // (then every listener pauses). A template, not a std::function: the store server's taker
  // would otherwise give the public library an exported type.
  template <typename Take>
  void accept_all(int listen_fd, Take&& take) {
    for (;;) {
      SocketAddress from;
      Fd fd = accept_one(listen_fd, &from);
      if (!fd.valid()) return;
      try {
        take(std::move(fd), from);
      } catch (const std::exception& e) {  // out of memory: this one is dropped, not the loop
        dropped(from, e);
      }
    }
  }
  // Watches the listeners again once a pause has passed: call between batches of events.
  void resume_when_due();
  // When the current pause ends; nullopt when not paused (an event loop's wait bound).
  std::optional<Clock::time_point> paused_until() const { return paused_until_; }

 private:
  struct Listener {
    int fd;
    epoll_data_t data;
  };
  // The next connection waiting on `listen_fd`; an invalid Fd when there is none, or when
  // accept() failed (a shortage pauses the listeners).
  Fd accept_one(int listen_fd, SocketAddress* from);
  void dropped(const SocketAddress& from, const std::exception& why);
  void watch_all(uint32_t events);
  void pause(int error);

  int epoll_fd_;
  std::string who_;
  std::vector<Listener> listeners_;
  std::optional<Clock::time_point> paused_until_;
  bool short_ = false;  // warned about the current shortage; cleared by the next accept
  // Connections from anyone, so their troubles must not flood the log. Shortages have their
  // own limiter, so that a connection's trouble just before cannot silence a shortage's warning.
  WarningLimiter warnings_;
  WarningLimiter shortages_;
};

}  // namespace weft::util
