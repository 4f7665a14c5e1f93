// One OpRecord as one line of text, the form the flight recorder's dumps take (log lines,
// WEFT_FLIGHT_DIR files that weftrun reads back):
//
//   rank=1 group=default n=7 seq=6 op=all_reduce bytes=8 dtype=float32 algo=shm peer=-1
//   start_us=81234567 age_us=200512 dur_us=-1 state=running
//
// (one line). Async-signal-safe: the signal handler of flight_dump.cc formats with it, so no
// allocation, no locale, no stdio.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/op_record.h"

namespace weft::core {

// Appends text to a fixed buffer, truncating when it is full.
class TextBuffer {
 public:
  TextBuffer(char* data, std::size_t capacity) : data_(data), capacity_(capacity) {}
  TextBuffer& text(const char* s);
  TextBuffer& number(int64_t value);
  std::size_t size() const { return size_; }
  const char* data() const { return data_; }

 private:
  char* data_;
  std::size_t capacity_;
  std::size_t size_ = 0;
};

// Appends the line for `record` (without the newline); now_ns gives age_us.
void format_op_record(TextBuffer& out, const OpRecord& record, const char* group, int world_rank,
                      int64_t now_ns);

}  // namespace weft::core
