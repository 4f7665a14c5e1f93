// weft's log lines, for programs that embed weft: how many there are and where they go.
//
// weft writes lines such as
//   [weft INFO 12:01:02.345 node7:4242 rank 3 group default transport] rank 3 reaches rank 1 ...
// to stderr, or to WEFT_DEBUG_FILE, filtered by WEFT_DEBUG (level) and WEFT_DEBUG_SUBSYS
// (subsystems); docs/observability.md, "Logs". A program may take them over with a sink.
#pragma once

#include <functional>
#include <string_view>

#include "weft/export.h"

namespace weft {

// Ordered: a level enables itself and every level before it.
enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3, kTrace = 4 };

// `subsystem` is one of init, transport, coll, shm, store, python; `line` is the whole line,
// prefix included, without a trailing newline.
using LogSink =
    std::function<void(LogLevel level, std::string_view subsystem, std::string_view line)>;

// Sends every enabled line to `sink` instead of stderr or WEFT_DEBUG_FILE; nullptr restores
// them. The sink is called one line at a time (never concurrently), from any thread, weft's
// background threads included: it must not wait for anything a thread calling weft may hold
// (a lock of the program's, Python's GIL). Lines weft logs from inside the sink go to stderr.
// Once set_log_sink returns, the previous sink is not running and will not be called again.
// Calling it from inside a sink throws weft::Error (kInvalidArgument).
WEFT_API void set_log_sink(LogSink sink);

// Overrides WEFT_DEBUG for the rest of the process (WEFT_DEBUG_SUBSYS still applies).
WEFT_API void set_log_level(LogLevel level);
WEFT_API LogLevel log_level();

// Logs `message` through weft's logger, as `subsystem` (one of those above; weft's language
// bindings use "python"), if the level and WEFT_DEBUG_SUBSYS let it through. Throws
// weft::Error (kInvalidArgument) for an unknown subsystem.
WEFT_API void log_message(LogLevel level, std::string_view subsystem, std::string_view message);

}  // namespace weft
