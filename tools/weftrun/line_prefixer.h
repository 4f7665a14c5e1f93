// LinePrefixer — turns one child stream's bytes into whole lines, each prefixed with the rank
// (and, when asked, the wall-clock time weftrun read it), written to one of weftrun's own fds.
//
// Contract: feed() takes whatever read() returned; only complete lines are written (all the
// complete lines of one chunk in one write), so that lines of different ranks never interleave
// mid-line (weftrun is the only writer and is single-threaded). finish() writes a last partial
// line (adding the newline) when the child is gone. A line longer than kMaxLine is cut and
// written in pieces rather than buffered without bound. A closed output fd (EPIPE) drops
// output silently: the job keeps running. Not thread-safe; one per child stream.
#pragma once

#include <cstddef>
#include <string>

namespace weft::run {

class LinePrefixer {
 public:
  static constexpr std::size_t kMaxLine = std::size_t{64} * 1024;

  // out_fd is borrowed, not owned. With `timestamp`, each line starts with the local time at
  // which weftrun read it, "[2026-11-25 17:30:01.123] ", before `prefix`.
  LinePrefixer(std::string prefix, int out_fd, bool timestamp = false)
      : prefix_(std::move(prefix)), out_fd_(out_fd), timestamp_(timestamp) {}

  void feed(const char* data, std::size_t size);
  void finish();

 private:
  void append_line(const char* line, std::size_t size, bool add_newline);
  void stamp_now();  // fills stamp_ when timestamp_

  std::string prefix_;
  int out_fd_;
  bool timestamp_;
  std::string stamp_;    // the time prefix of the lines of the current chunk
  std::string partial_;  // bytes of an unfinished line
  std::string scratch_;  // reused output buffer
};

// "[YYYY-MM-DD HH:MM:SS.mmm] " in local time, for --timestamp.
std::string wall_clock_stamp();

// Writes all bytes to fd, retrying on EINTR and short writes; false when the fd is unusable.
bool write_fully(int fd, const char* data, std::size_t size);

// weftrun's own messages: "weftrun: <text>\n" to stderr in one write, so that they never
// split a rank's line either.
void print_launcher_line(const std::string& text);

}  // namespace weft::run
