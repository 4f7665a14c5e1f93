#include "line_prefixer.h"

#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace weft::run {

bool write_fully(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;  // EPIPE (SIGPIPE is ignored by weftrun), EBADF, ...
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

std::string wall_clock_stamp() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  tm local{};
  ::localtime_r(&now.tv_sec, &local);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &local);
  char stamp[80];
  std::snprintf(stamp, sizeof stamp, "[%s.%03d] ", date, static_cast<int>(now.tv_nsec / 1'000'000));
  return stamp;
}

void print_launcher_line(const std::string& text) {
  std::string line = "weftrun: " + text + "\n";
  write_fully(2, line.data(), line.size());
}

void LinePrefixer::append_line(const char* line, std::size_t size, bool add_newline) {
  scratch_.append(stamp_);
  scratch_.append(prefix_);
  scratch_.append(line, size);
  if (add_newline) scratch_.push_back('\n');
}

void LinePrefixer::stamp_now() {
  // One reading of the clock per chunk: its lines arrived together.
  if (timestamp_) stamp_ = wall_clock_stamp();
}

void LinePrefixer::feed(const char* data, std::size_t size) {
  // Every complete line of this chunk goes out in one write: fewer system calls, and still
  // only whole lines, so nothing interleaves with other ranks' lines.
  scratch_.clear();
  stamp_now();
  const char* end = data + size;
  while (data < end) {
    const void* found = std::memchr(data, '\n', static_cast<std::size_t>(end - data));
    if (found == nullptr) {
      partial_.append(data, static_cast<std::size_t>(end - data));
      // NOTE(weftrun-long-lines): a line without a newline for kMaxLine bytes is written in
      // pieces, each on its own prefixed line, instead of being buffered without bound.
      while (partial_.size() >= kMaxLine) {
        append_line(partial_.data(), kMaxLine, true);
        partial_.erase(0, kMaxLine);
      }
      break;
    }
    std::size_t length = static_cast<std::size_t>(static_cast<const char*>(found) - data) + 1;
    if (partial_.empty()) {
      append_line(data, length, false);
    } else {
      partial_.append(data, length);
      append_line(partial_.data(), partial_.size(), false);
      partial_.clear();
    }
    data += length;
  }
  if (!scratch_.empty()) write_fully(out_fd_, scratch_.data(), scratch_.size());
}

void LinePrefixer::finish() {
  if (partial_.empty()) return;
  scratch_.clear();
  stamp_now();
  append_line(partial_.data(), partial_.size(), true);
  partial_.clear();
  write_fully(out_fd_, scratch_.data(), scratch_.size());
}

}  // namespace weft::run
