// weft's one logger: filtered lines to an embedder's sink (weft/log.h), WEFT_DEBUG_FILE or
// stderr, in that order of preference.
//
// A line: "[weft LEVEL hh:mm:ss.mmm host:pid rank R group G subsystem] message", where
// "rank R group G" appear once init_process_group has named them (set_log_rank/group). One
// write(2) or one sink call per line, under one lock: lines never interleave.
//
// Filter: WEFT_DEBUG (level) and WEFT_DEBUG_SUBSYS (subsystems), read once on first use;
// weft::set_log_level overrides the level. Call sites pass the message as a callable that is
// only called when the line passes the filter, so a disabled line costs one relaxed atomic
// load and builds no string:
//   util::log_info(util::Subsys::kInit, [&] { return "listening on " + address; });
// Capture errno by value ([error = errno]): it is read before the filter runs.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "weft/log.h"

namespace weft::util {

using weft::LogLevel;

enum class Subsys : uint8_t { kInit, kTransport, kColl, kShm, kStore, kPython };
inline constexpr int kNumSubsys = 6;
inline constexpr uint32_t kAllSubsys = (1u << kNumSubsys) - 1;

// "init", "transport", ...; "ERROR", "WARN", ...
std::string_view subsys_name(Subsys subsys);
std::string_view level_tag(LogLevel level);

namespace detail {
// Bits 0-7: level + 1; bits 8 and up: one per enabled subsystem. 0: not read yet.
extern std::atomic<uint32_t> g_log_filter;
uint32_t load_log_filter();
}  // namespace detail

inline bool log_enabled(LogLevel level, Subsys subsys) {
  uint32_t filter = detail::g_log_filter.load(std::memory_order_relaxed);
  if (filter == 0) filter = detail::load_log_filter();
  bool level_on = static_cast<uint32_t>(level) < (filter & 0xffu);
  return level_on && ((filter >> (8 + static_cast<int>(subsys))) & 1u) != 0;
}

// Writes one line if it passes the filter; prefer the lazy helpers below.
void log_line(LogLevel level, Subsys subsys, std::string_view message);

template <typename MakeMessage>
void log(LogLevel level, Subsys subsys, MakeMessage&& make_message) {
  if (log_enabled(level, subsys))
    log_line(level, subsys, std::forward<MakeMessage>(make_message)());
}
template <typename MakeMessage>
void log_error(Subsys subsys, MakeMessage&& make_message) {
  log(LogLevel::kError, subsys, std::forward<MakeMessage>(make_message));
}
template <typename MakeMessage>
void log_warn(Subsys subsys, MakeMessage&& make_message) {
  log(LogLevel::kWarn, subsys, std::forward<MakeMessage>(make_message));
}
template <typename MakeMessage>
void log_info(Subsys subsys, MakeMessage&& make_message) {
  log(LogLevel::kInfo, subsys, std::forward<MakeMessage>(make_message));
}
template <typename MakeMessage>
void log_debug(Subsys subsys, MakeMessage&& make_message) {
  log(LogLevel::kDebug, subsys, std::forward<MakeMessage>(make_message));
}
template <typename MakeMessage>
void log_trace(Subsys subsys, MakeMessage&& make_message) {
  log(LogLevel::kTrace, subsys, std::forward<MakeMessage>(make_message));
}

// Who this process is, for the prefix and WEFT_DEBUG_FILE's %r (-1 and "": not known). A
// process has one rank; when several are set (ranks as threads of one process, in tests), the
// last one set wins.
void set_log_rank(int rank);
void set_log_group(std::string group);

// Re-reads WEFT_DEBUG, WEFT_DEBUG_SUBSYS and WEFT_DEBUG_FILE (tests; weft reads them once).
void reload_log_settings();

// --- the pieces, exposed for tests -------------------------------------------------------

// The mask of WEFT_DEBUG_SUBSYS: "" or "all": every subsystem; "init,coll": those;
// "^shm,store": all but those. Throws weft::Error (kInvalidArgument) naming an unknown one.
uint32_t parse_subsys_list(std::string_view list);

// WEFT_DEBUG_FILE's pattern with %h (host), %p (pid), %r (rank; "unknown" when rank < 0) and
// %% (a %) expanded.
std::string expand_log_path(std::string_view pattern, std::string_view host, int pid, int rank);

struct LogOrigin {
  std::string host;
  int pid = 0;
  int rank = -1;      // -1: not known yet
  std::string group;  // empty: not known yet
};

// One line, without its newline.
std::string format_log_line(LogLevel level, Subsys subsys, const LogOrigin& origin,
                            std::chrono::system_clock::time_point when, std::string_view message);

}  // namespace weft::util
