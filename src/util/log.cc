#include "util/log.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <memory>

#include "util/mutex.h"
#include "util/settings.h"
#include "weft/error.h"

namespace weft::util {

namespace detail {
std::atomic<uint32_t> g_log_filter{0};
}  // namespace detail

namespace {

constexpr std::string_view kSubsysNames[kNumSubsys] = {"init", "transport", "coll",
                                                       "shm",  "store",     "python"};
constexpr std::string_view kLevelNames[] = {"error", "warn", "info", "debug", "trace"};
constexpr std::string_view kLevelTags[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
constexpr LogLevel kDefaultLevel = LogLevel::kWarn;

uint32_t make_filter(LogLevel level, uint32_t subsys_mask) {
  return (static_cast<uint32_t>(level) + 1) | (subsys_mask << 8);
}

// Written straight to stderr: the logger cannot log its own configuration errors.
void complain(const std::string& what) {
  std::string line = "[weft ERROR] " + what + "\n";
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

LogLevel level_from_environment() {
  std::string value;
  try {
    value = setting_choice("WEFT_DEBUG");
  } catch (const std::exception& e) {
    // A malformed WEFT_DEBUG must not be ignored silently; say so and use the default.
    complain(e.what());
    return kDefaultLevel;
  }
  for (int i = 0; i < 5; ++i) {
    if (value == kLevelNames[i]) return static_cast<LogLevel>(i);
  }
  return kDefaultLevel;
}

uint32_t subsys_from_environment() {
  try {
    return parse_subsys_list(setting_string("WEFT_DEBUG_SUBSYS"));
  } catch (const std::exception& e) {
    complain(e.what());
    return kAllSubsys;
  }
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

// Where lines go, and who writes them. Guarded by `mutex`, which is also held across fork()
// (pthread_atfork) so that a child never inherits it locked by a thread it does not have.
struct Output {
  Mutex mutex;
  std::shared_ptr<LogSink> sink WEFT_GUARDED_BY(mutex);
  const std::string host = host_name();  // never changes: read without the lock
  int rank WEFT_GUARDED_BY(mutex) = -1;
  std::string group WEFT_GUARDED_BY(mutex);
  // WEFT_DEBUG_FILE; empty: stderr
  std::string file_pattern WEFT_GUARDED_BY(mutex) = setting_string("WEFT_DEBUG_FILE");
  // The file open as `file_fd`, or that failed to open.
  std::string file_path WEFT_GUARDED_BY(mutex);
  int file_fd WEFT_GUARDED_BY(mutex) = -1;
};

Output& output() {
  // Never destroyed: weft's background threads may log while the process exits.
  static Output* instance = [] {
    auto* made = new Output();
    // Not analysed: the lock is taken in one handler and given up in another.
    pthread_atfork([]() WEFT_NO_THREAD_SAFETY_ANALYSIS { output().mutex.lock(); },
                   []() WEFT_NO_THREAD_SAFETY_ANALYSIS { output().mutex.unlock(); },
                   []() WEFT_NO_THREAD_SAFETY_ANALYSIS { output().mutex.unlock(); });
    return made;
  }();
  return *instance;
}

// Set while this thread runs the sink: what the sink logs goes to stderr, not back into it.
thread_local bool t_in_sink = false;

void write_all(int fd, const std::string& text) {
  ssize_t ignored = ::write(fd, text.data(), text.size());
  (void)ignored;
}

// The descriptor for WEFT_DEBUG_FILE as it expands now, (re)opened when the expansion changed
// (the rank became known, or a forked child has another pid); -1: stderr. A pattern with %r
// waits for the rank: until then lines go to stderr.
int file_for_lines(Output& out) WEFT_REQUIRES(out.mutex) {
  if (out.file_pattern.empty()) return -1;
  if (out.rank < 0 && out.file_pattern.find("%r") != std::string::npos) return -1;
  std::string path = expand_log_path(out.file_pattern, out.host, getpid(), out.rank);
  if (path == out.file_path) return out.file_fd;
  if (out.file_fd >= 0) ::close(out.file_fd);
  out.file_path = path;
  // Appended to: ranks whose pattern expands alike share the file without overwriting.
  out.file_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out.file_fd < 0) complain("WEFT_DEBUG_FILE: cannot open " + path + "; logging to stderr");
  return out.file_fd;
}

LogOrigin origin_of(const Output& out) WEFT_REQUIRES(out.mutex) {
  return LogOrigin{.host = out.host, .pid = getpid(), .rank = out.rank, .group = out.group};
}

}  // namespace

std::string_view subsys_name(Subsys subsys) { return kSubsysNames[static_cast<int>(subsys)]; }

std::string_view level_tag(LogLevel level) { return kLevelTags[static_cast<int>(level)]; }

uint32_t detail::load_log_filter() {
  uint32_t loaded = make_filter(level_from_environment(), subsys_from_environment());
  uint32_t expected = 0;
  // Another thread (or set_log_level) may have been first: theirs stands.
  if (!g_log_filter.compare_exchange_strong(expected, loaded)) return expected;
  return loaded;
}

void reload_log_settings() {
  detail::g_log_filter.store(0);
  detail::load_log_filter();
  Output& out = output();
  MutexLock lock(out.mutex);
  out.file_pattern = setting_string("WEFT_DEBUG_FILE");
  if (out.file_fd >= 0) ::close(out.file_fd);
  out.file_fd = -1;
  out.file_path.clear();
}

uint32_t parse_subsys_list(std::string_view list) {
  bool excluding = !list.empty() && list.front() == '^';
  if (excluding) list.remove_prefix(1);
  if (list.empty() || list == "all") return excluding ? 0 : kAllSubsys;
  uint32_t named = 0;
  while (!list.empty()) {
    std::string_view name = list.substr(0, list.find(','));
    list.remove_prefix(std::min(list.size(), name.size() + 1));
    int found = -1;
    for (int i = 0; i < kNumSubsys; ++i) {
      if (name == kSubsysNames[i]) found = i;
    }
    if (found < 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "WEFT_DEBUG_SUBSYS names '" + std::string(name) +
                      "': expected a comma list of init, transport, coll, shm, store, python "
                      "(all of them by default; ^ first to exclude those listed)");
    }
    named |= 1u << found;
  }
  return excluding ? kAllSubsys & ~named : named;
}

std::string expand_log_path(std::string_view pattern, std::string_view host, int pid, int rank) {
  std::string path;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
    if (c != '%' || (next != 'h' && next != 'p' && next != 'r' && next != '%')) {
      path += c;
      continue;
    }
    ++i;
    if (next == 'h') path += host;
    if (next == 'p') path += std::to_string(pid);
    if (next == 'r') path += rank < 0 ? "unknown" : std::to_string(rank);
    if (next == '%') path += '%';
  }
  return path;
}

std::string format_log_line(LogLevel level, Subsys subsys, const LogOrigin& origin,
                            std::chrono::system_clock::time_point when, std::string_view message) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(when);
  int millis = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count() %
      1000);
  std::tm local{};
  localtime_r(&seconds, &local);
  char clock[16];
  std::snprintf(clock, sizeof clock, "%02d:%02d:%02d.%03d", local.tm_hour, local.tm_min,
                local.tm_sec, millis);
  std::string line = "[weft ";
  line.append(level_tag(level)).append(" ").append(clock).append(" ");
  line.append(origin.host).append(":").append(std::to_string(origin.pid));
  if (origin.rank >= 0) line.append(" rank ").append(std::to_string(origin.rank));
  if (!origin.group.empty()) line.append(" group ").append(origin.group);
  line.append(" ").append(subsys_name(subsys)).append("] ").append(message);
  return line;
}

void log_line(LogLevel level, Subsys subsys, std::string_view message) {
  if (!log_enabled(level, subsys)) return;
  auto now = std::chrono::system_clock::now();
  Output& out = output();
  if (t_in_sink) {
    // The sink logs (or calls weft, which logs): its lock is ours, held. Straight to stderr,
    // without the rank and group the lock guards (the host never changes).
    LogOrigin unlocked{.host = out.host, .pid = getpid()};
    write_all(STDERR_FILENO, format_log_line(level, subsys, unlocked, now, message) + "\n");
    return;
  }
  MutexLock lock(out.mutex);
  std::string line = format_log_line(level, subsys, origin_of(out), now, message);
  if (out.sink) {
    t_in_sink = true;
    try {
      (*out.sink)(level, subsys_name(subsys), line);
    } catch (...) {
      // A throwing sink must not unwind through weft's threads; the line is lost.
    }
    t_in_sink = false;
    return;
  }
  int fd = file_for_lines(out);
  write_all(fd >= 0 ? fd : STDERR_FILENO, line + "\n");
}

void set_log_rank(int rank) {
  Output& out = output();
  MutexLock lock(out.mutex);
  out.rank = rank;
}

void set_log_group(std::string group) {
  Output& out = output();
  MutexLock lock(out.mutex);
  out.group = std::move(group);
}

}  // namespace weft::util

namespace weft {

void set_log_sink(LogSink sink) {
  if (util::t_in_sink) {
    throw Error(ErrorCode::kInvalidArgument, "set_log_sink called from inside the log sink");
  }
  auto installed = sink ? std::make_shared<LogSink>(std::move(sink)) : nullptr;
  util::Output& out = util::output();
  std::shared_ptr<LogSink> previous;
  {
    // Held by every running sink call: once we have it, the previous sink is not running.
    util::MutexLock lock(out.mutex);
    previous = std::exchange(out.sink, std::move(installed));
  }
  // Destroyed outside the lock: its destructor may log.
}

void set_log_level(LogLevel level) {
  uint32_t filter = util::detail::g_log_filter.load();
  if (filter == 0) filter = util::detail::load_log_filter();
  uint32_t updated;
  do {
    updated = (filter & ~0xffu) | (static_cast<uint32_t>(level) + 1);
  } while (!util::detail::g_log_filter.compare_exchange_weak(filter, updated));
}

void log_message(LogLevel level, std::string_view subsystem, std::string_view message) {
  for (int i = 0; i < util::kNumSubsys; ++i) {
    if (util::kSubsysNames[i] != subsystem) continue;
    util::log_line(level, static_cast<util::Subsys>(i), message);
    return;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "no weft log subsystem '" + std::string(subsystem) + "'");
}

LogLevel log_level() {
  uint32_t filter = util::detail::g_log_filter.load();
  if (filter == 0) filter = util::detail::load_log_filter();
  return static_cast<LogLevel>((filter & 0xffu) - 1);
}

}  // namespace weft
