#include "transport/tcp/epoll_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "util/log.h"

namespace weft::transport {

namespace {
// epoll's data.ptr of the wake-up: no watched descriptor's tag can have this address.
char kWakeTag;
constexpr int kEventsPerWait = 64;
}  // namespace

EpollLoop::EpollLoop()
    : epoll_fd_(epoll_create1(EPOLL_CLOEXEC)), wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (!epoll_fd_.valid() || !wake_fd_.valid()) util::throw_system_error("epoll/eventfd", errno);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.ptr = &kWakeTag;
  if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, wake_fd_.get(), &event) != 0) {
    util::throw_system_error("epoll_ctl", errno);
  }
}

void EpollLoop::start(Handler& handler) {
  thread_ = std::thread([this, &handler] { run(handler); });
}

void EpollLoop::wake() {
  uint64_t one = 1;
  ssize_t ignored = ::write(wake_fd_.get(), &one, sizeof one);
  (void)ignored;
}

void EpollLoop::stop() {
  stop_.store(true);
  wake();
  if (thread_.joinable()) thread_.join();
}

void EpollLoop::run(Handler& handler) {
  epoll_event events[kEventsPerWait];
  while (!stop_.load()) {
    int count = epoll_wait(epoll_fd_.get(), events, kEventsPerWait, handler.next_wait_ms());
    if (count < 0 && errno != EINTR) {
      util::log_error(util::Subsys::kTransport, [&, saved_errno = errno] {
        return "transport event loop: epoll_wait: " + std::string(strerror(saved_errno));
      });
      return;
    }
    for (int i = 0; i < count; ++i) {
      void* tag = events[i].data.ptr;
      if (tag == &kWakeTag) {
        uint64_t drained;
        ssize_t ignored = ::read(wake_fd_.get(), &drained, sizeof drained);
        (void)ignored;
      } else {
        handler.on_event(tag, events[i].events);
      }
    }
    handler.after_batch();
  }
}

}  // namespace weft::transport
