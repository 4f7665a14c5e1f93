// weft's log lines into Python's logging, without ever taking the GIL on weft's threads.
//
// weft calls its sink from any thread, its background threads included, and a Python thread may
// hold the GIL while it waits for one of them (joining a worker as a group is destroyed): a sink
// that took the GIL could deadlock. So the sink only appends the line to a queue, under a mutex
// that nobody holds while waiting for anything, and Python takes the lines out: a daemon thread
// of the package waits for them with the GIL released, and flush_python_logging() takes what is
// queued at a point the program chooses.
#include "log_bridge.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "weft/log.h"

namespace weft::python {

namespace py = pybind11;

namespace {

struct QueuedLine {
  int level;
  std::string subsystem;
  std::string line;
};

class LineQueue {
 public:
  // Bounded: a program that never lets the drain run must not grow without end.
  static constexpr std::size_t kCapacity = 10'000;

  void push(LogLevel level, std::string_view subsystem, std::string_view line) {
    {
      std::lock_guard lock(mutex_);
      if (lines_.size() >= kCapacity) {
        ++dropped_;
        return;
      }
      lines_.push_back({static_cast<int>(level), std::string(subsystem), std::string(line)});
    }
    ready_.notify_one();
  }

  // The queued lines, after waiting up to `wait` for one; empty when woken or timed out.
  std::vector<QueuedLine> take(std::chrono::milliseconds wait) {
    std::unique_lock lock(mutex_);
    ready_.wait_for(lock, wait, [&] { return !lines_.empty() || woken_; });
    woken_ = false;
    std::vector<QueuedLine> taken(std::make_move_iterator(lines_.begin()),
                                  std::make_move_iterator(lines_.end()));
    lines_.clear();
    if (dropped_ > 0) {
      taken.push_back({static_cast<int>(LogLevel::kWarn), "python",
                       std::to_string(dropped_) +
                           " weft log lines were dropped: Python did not take them in time"});
      dropped_ = 0;
    }
    return taken;
  }

  void wake() {
    {
      std::lock_guard lock(mutex_);
      woken_ = true;
    }
    ready_.notify_all();
  }

  // In a forked child, whose only thread is the one that forked: the parent's drain thread may
  // have held the mutex at the fork, and its lines are the parent's to log. Made anew (the old
  // ones are abandoned, not destroyed: they may be in any state).
  void reset_after_fork() {
    new (&mutex_) std::mutex();
    new (&ready_) std::condition_variable();
    new (&lines_) std::deque<QueuedLine>();
    dropped_ = 0;
    woken_ = false;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<QueuedLine> lines_;
  uint64_t dropped_ = 0;
  bool woken_ = false;
};

// Never destroyed: weft's threads may still log while the process exits.
LineQueue& queue() {
  static LineQueue* instance = new LineQueue();
  return *instance;
}

void install() {
  set_log_sink([](LogLevel level, std::string_view subsystem, std::string_view line) {
    queue().push(level, subsystem, line);
  });
}

py::list take(double wait_seconds) {
  std::vector<QueuedLine> taken;
  {
    py::gil_scoped_release release;
    taken = queue().take(std::chrono::milliseconds(static_cast<int64_t>(wait_seconds * 1000)));
  }
  py::list lines;
  for (QueuedLine& queued : taken) {
    lines.append(py::make_tuple(queued.level, queued.subsystem, queued.line));
  }
  return lines;
}

LogLevel level_of(int level) {
  if (level < 0 || level > static_cast<int>(LogLevel::kTrace)) {
    throw py::value_error("weft log level " + std::to_string(level) +
                          " is not 0 (error) to 4 (trace)");
  }
  return static_cast<LogLevel>(level);
}

}  // namespace

void register_log_bridge(py::module_& m) {
  m.def("_log_bridge_install", &install, "Sends weft's log lines to the bridge's queue.");
  m.def(
      "_log_bridge_uninstall", [] { set_log_sink(nullptr); },
      "Sends weft's log lines to stderr or WEFT_DEBUG_FILE again.");
  m.def("_log_bridge_take", &take, py::arg("wait_seconds"),
        "[(level, subsystem, line)] queued, after waiting up to wait_seconds for one (GIL "
        "released).");
  m.def(
      "_log_bridge_wake", [] { queue().wake(); }, "Ends a waiting _log_bridge_take.");
  m.def("_log_bridge_after_fork_in_child", [] { queue().reset_after_fork(); });
  m.def("_set_log_level", [](int level) { set_log_level(level_of(level)); });
  m.def("_log_level", [] { return static_cast<int>(log_level()); });
  m.def(
      "_log",
      [](int level, const std::string& message) {
        log_message(level_of(level), "python", message);
      },
      py::arg("level"), py::arg("message"),
      "Logs a line of subsystem python through weft's logger.");
}

}  // namespace weft::python
