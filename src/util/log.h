// weft's one logger: lines on stderr, filtered by WEFT_DEBUG.
//
// Each line: "[weft LEVEL hh:mm:ss.mmm pid] message". Thread-safe (one write(2) per line).
// The level is read from WEFT_DEBUG once, on first use; set_log_level overrides it.
#pragma once

#include <string>

namespace weft::util {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3, kTrace = 4 };

bool log_enabled(LogLevel level);
void set_log_level(LogLevel level);
void log_line(LogLevel level, const std::string& message);

inline void log_error(const std::string& m) { log_line(LogLevel::kError, m); }
inline void log_warn(const std::string& m) { log_line(LogLevel::kWarn, m); }
inline void log_info(const std::string& m) {
  if (log_enabled(LogLevel::kInfo)) log_line(LogLevel::kInfo, m);
}
inline void log_debug(const std::string& m) {
  if (log_enabled(LogLevel::kDebug)) log_line(LogLevel::kDebug, m);
}

}  // namespace weft::util
