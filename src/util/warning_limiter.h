// WarningLimiter — one WARN line per interval for a kind of event that anyone who reaches a
// port can repeat at will (connections refused, connections closed for stalling, oversized
// requests), so that a flood of them cannot flood the log: the next line logged says how many
// were left out.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "util/log.h"
#include "util/mutex.h"

namespace weft::util {

class WarningLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  WarningLimiter(Subsys subsys, std::chrono::seconds interval)
      : subsys_(subsys), interval_(interval) {}

  template <typename MakeMessage>
  void warn(MakeMessage&& make_message) {
    if (!log_enabled(LogLevel::kWarn, subsys_)) return;
    uint64_t left_out = 0;
    if (!due(Clock::now(), &left_out)) return;
    log_warn(subsys_, [&] {
      std::string line = make_message();
      if (left_out > 0) {
        line += " (and " + std::to_string(left_out) + " more like it in the last " +
                std::to_string(interval_.count()) + " s)";
      }
      return line;
    });
  }

  // Whether a line may be written at `now`; when it may, *left_out is how many were not since
  // the last one that was.
  bool due(Clock::time_point now, uint64_t* left_out) {
    MutexLock lock(mutex_);
    if (last_ && now - *last_ < interval_) {
      ++left_out_;
      return false;
    }
    last_ = now;
    *left_out = std::exchange(left_out_, 0);
    return true;
  }

 private:
  const Subsys subsys_;
  const std::chrono::seconds interval_;
  Mutex mutex_;
  std::optional<Clock::time_point> last_ WEFT_GUARDED_BY(mutex_);
  uint64_t left_out_ WEFT_GUARDED_BY(mutex_) = 0;
};

}  // namespace weft::util
