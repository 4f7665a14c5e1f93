// WarningLimiter — one WARN line per interval for a kind of event that a stranger can repeat
// at will (connections refused, connections closed for stalling), so that a flood of them
// cannot flood the log: the next line logged says how many were left out.
// Not thread-safe: its owner (the store server's event loop) calls it from one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "util/log.h"

namespace weft::store {

class WarningLimiter {
 public:
  explicit WarningLimiter(std::chrono::seconds interval) : interval_(interval) {}

  template <typename MakeMessage>
  void warn(MakeMessage&& make_message) {
    auto now = std::chrono::steady_clock::now();
    if (last_ && now - *last_ < interval_) {
      ++left_out_;
      return;
    }
    last_ = now;
    uint64_t left_out = std::exchange(left_out_, 0);
    util::log_warn(util::Subsys::kStore, [&] {
      std::string line = make_message();
      if (left_out > 0) {
        line += " (and " + std::to_string(left_out) + " more like it in the last " +
                std::to_string(interval_.count()) + " s)";
      }
      return line;
    });
  }

 private:
  std::chrono::seconds interval_;
  std::optional<std::chrono::steady_clock::time_point> last_;
  uint64_t left_out_ = 0;
};

}  // namespace weft::store
