// EpollLoop — one thread that waits on one epoll set and hands what it finds to a Handler, and
// a way for any thread to wake it: the TCP path's event loop, without what the path does with
// the events (tcp_path.h).
// Thread-safety: wake() from any thread; start() and stop() from the owner, once each; the
// Handler runs on the loop's thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "util/socket.h"

namespace weft::transport {

class EpollLoop {
 public:
  class Handler {
   public:
    virtual ~Handler() = default;
    // How long the next wait may last, in ms (the loop's tick).
    virtual int next_wait_ms() = 0;
    // One event of a descriptor watched with `tag` (never the loop's own wake-up).
    virtual void on_event(void* tag, uint32_t events) = 0;
    // After each wait's batch of events, or its timeout: timers and clean-up.
    virtual void after_batch() = 0;
  };

  // Makes the epoll set and the wake-up; throws Error(kSystem) when it cannot.
  EpollLoop();
  ~EpollLoop() { stop(); }
  EpollLoop(const EpollLoop&) = delete;
  EpollLoop& operator=(const EpollLoop&) = delete;

  // The epoll set, for watching descriptors (their events carry the caller's tag in data.ptr).
  int epoll_fd() const { return epoll_fd_.get(); }
  // Runs `handler` on the loop's thread until stop().
  void start(Handler& handler);
  // Ends the current wait at once (or the next one, if none is in progress).
  void wake();
  // Ends the loop and joins its thread; the handler is not called after it returns.
  void stop();

 private:
  void run(Handler& handler);

  util::Fd epoll_fd_;
  util::Fd wake_fd_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace weft::transport
