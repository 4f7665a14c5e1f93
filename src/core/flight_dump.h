// Dumping the flight recorders: to the log when a group fails, and as a file per rank into
// WEFT_FLIGHT_DIR (weftrun's, which prints the ranks' last ops side by side) and WEFT_TRACE's
// directory.
//
// Every live recorder of the process is in a fixed table, so that a dump can write all the
// groups of a rank, and so that a rank stopped by SIGTERM/SIGINT/SIGHUP (weftrun forwards them)
// can still write its file: when WEFT_FLIGHT_DIR is set, a handler is installed for those
// signals (unless ignored) that writes the file with write(2), then hands the signal to what
// was there before: the program's own handler (Python's SIGINT handler, which raises
// KeyboardInterrupt), or the default action, re-raised.
#pragma once

#include <string>
#include <vector>

#include "core/flight_recorder.h"
#include "weft/error.h"

namespace weft::core {

// Adds a group's recorder to the process's table (and installs the signal handler when
// WEFT_FLIGHT_DIR is set); remove() before the recorder dies. Not async-signal-safe.
void register_flight_recorder(const FlightRecorder* recorder, const std::string& group,
                              int world_rank);
void unregister_flight_recorder(const FlightRecorder* recorder);

// Writes every registered recorder of `world_rank`, oldest op first per group, as the file
// `dir`/`prefix`<world_rank>.txt (replacing an older dump) through a temporary file named
// with `temporary_suffix` (callers that may run at once use different ones). Async-signal-safe.
void write_flight_file(const char* dir, const char* prefix, int world_rank, const char* reason,
                       const char* temporary_suffix);

// A group failed: logs its recorder (one error line per op, newest last).
void log_flight_recorder(const std::vector<OpRecord>& records, const std::string& group, int rank,
                         int world_rank, const Error& cause);
// Writes the rank's dump files into WEFT_FLIGHT_DIR (rank<R>.txt) and WEFT_TRACE's directory
// (flight_rank<R>.txt) when they are set.
void write_flight_files(int world_rank, const Error& cause, const std::string& group);

}  // namespace weft::core
