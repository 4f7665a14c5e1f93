#include "util/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "util/settings.h"

namespace weft::util {

namespace {

constexpr int kUnset = -1;
std::atomic<int> g_level{kUnset};

int level_from_environment() {
  std::string value;
  try {
    value = setting_choice("WEFT_DEBUG");
  } catch (const std::exception& e) {
    // A malformed WEFT_DEBUG must not be ignored silently; say so once and use the default.
    std::fprintf(stderr, "[weft ERROR] %s\n", e.what());
    value = "warn";
  }
  static constexpr const char* kNames[] = {"error", "warn", "info", "debug", "trace"};
  for (int i = 0; i < 5; ++i) {
    if (value == kNames[i]) return i;
  }
  return 1;
}

const char* tag(LogLevel level) {
  static constexpr const char* kTags[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
  return kTags[static_cast<int>(level)];
}

}  // namespace

bool log_enabled(LogLevel level) {
  int current = g_level.load(std::memory_order_relaxed);
  if (current == kUnset) {
    current = level_from_environment();
    g_level.store(current, std::memory_order_relaxed);
  }
  return static_cast<int>(level) <= current;
}

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level)); }

void log_line(LogLevel level, const std::string& message) {
  if (!log_enabled(level)) return;
  auto now = std::chrono::system_clock::now();
  std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  int millis = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm local{};
  localtime_r(&seconds, &local);
  char head[96];
  std::snprintf(head, sizeof head, "[weft %s %02d:%02d:%02d.%03d %d] ", tag(level), local.tm_hour,
                local.tm_min, local.tm_sec, millis, static_cast<int>(getpid()));
  std::string line = head + message + "\n";
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace weft::util
