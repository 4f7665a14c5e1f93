#include "core/op_record_text.h"

namespace weft::core {

TextBuffer& TextBuffer::text(const char* s) {
  if (s == nullptr) s = "-";
  while (*s != '\0' && size_ < capacity_) data_[size_++] = *s++;
  return *this;
}

TextBuffer& TextBuffer::number(int64_t value) {
  char digits[24];
  int n = 0;
  // Negated as unsigned: INT64_MIN has no positive int64_t.
  uint64_t magnitude = value < 0 ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  do {
    digits[n++] = static_cast<char>('0' + magnitude % 10);
    magnitude /= 10;
  } while (magnitude != 0);
  if (value < 0 && size_ < capacity_) data_[size_++] = '-';
  while (n > 0 && size_ < capacity_) data_[size_++] = digits[--n];
  return *this;
}

void format_op_record(TextBuffer& out, const OpRecord& record, const char* group, int world_rank,
                      int64_t now_ns) {
  const OpStart& what = record.what;
  // name_of(DType) returns a view of static text ending in a NUL.
  const char* dtype = name_of(what.dtype).data();
  int64_t duration_us =
      record.outcome == OpOutcome::kRunning ? -1 : (record.end_ns - record.start_ns) / 1000;
  out.text("rank=").number(world_rank).text(" group=").text(group);
  out.text(" n=").number(static_cast<int64_t>(record.index)).text(" seq=").number(what.seq);
  out.text(" op=").text(what.op).text(" bytes=").number(what.bytes);
  out.text(" dtype=").text(dtype).text(" algo=").text(what.algorithm);
  out.text(" peer=").number(what.peer).text(" start_us=").number(record.start_ns / 1000);
  out.text(" age_us=").number((now_ns - record.start_ns) / 1000);
  out.text(" dur_us=").number(duration_us).text(" state=").text(name_of(record.outcome));
}

}  // namespace weft::core
