#include "util/acceptor.h"

#include <sys/resource.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace weft::util {

namespace {
// accept()'s errors that say the process or the kernel is short of something, not the peer.
bool is_shortage(int error) {
  return error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM;
}
// The peer gave up, or nothing is left to accept: no news.
bool is_routine(int error) { return error == EAGAIN || error == EINTR || error == ECONNABORTED; }
}  // namespace

Acceptor::Acceptor(int epoll_fd, Subsys subsys, std::string who)
    : epoll_fd_(epoll_fd),
      who_(std::move(who)),
      warnings_(subsys, std::chrono::seconds(5)),
      shortages_(subsys, std::chrono::seconds(5)) {}

void Acceptor::add(int listen_fd, epoll_data_t data) {
  listeners_.push_back(Listener{listen_fd, data});
  epoll_event event{};
  event.events = paused_until_ ? 0u : static_cast<uint32_t>(EPOLLIN);
  event.data = data;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd, &event) != 0) {
    listeners_.pop_back();
    throw_system_error("epoll_ctl(listener)", errno);
  }
}

Fd Acceptor::accept_one(int listen_fd, SocketAddress* from) {
  from->length = sizeof from->storage;
  int fd = accept4(listen_fd, reinterpret_cast<sockaddr*>(&from->storage), &from->length,
                   SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd >= 0) {
    short_ = false;
    return Fd(fd);
  }
  if (is_shortage(errno)) {
    pause(errno);
  } else if (!is_routine(errno)) {
    warnings_.warn([&, saved_errno = errno] {
      return who_ + ": accept: " + std::string(strerror(saved_errno));
    });
  }
  return Fd();
}

void Acceptor::dropped(const SocketAddress& from, const std::exception& why) {
  warnings_.warn([&] {
    return who_ + " could not take a connection from " + from.to_string() + ": " + why.what();
  });
}

void Acceptor::resume_when_due() {
  if (!paused_until_ || Clock::now() < *paused_until_) return;
  paused_until_.reset();
  watch_all(EPOLLIN);
}

void Acceptor::watch_all(uint32_t events) {
  for (const Listener& listener : listeners_) {
    epoll_event event{};
    event.events = events;
    event.data = listener.data;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listener.fd, &event);
  }
}

void Acceptor::pause(int error) {
  watch_all(0);
  paused_until_ = Clock::now() + kPause;
  // Once per shortage, not per pause: it may last.
  if (std::exchange(short_, true)) return;
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  shortages_.warn([&] {
    return who_ + " cannot accept a connection: " + strerror(error) + " (this process may open " +
           std::to_string(limit.rlim_cur) +
           " file descriptors, RLIMIT_NOFILE: `ulimit -n`); retrying every " +
           std::to_string(kPause.count()) + " ms";
  });
}

}  // namespace weft::util
