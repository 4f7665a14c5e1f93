#include "core/op_timeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "util/log.h"

namespace weft::core {

namespace {

// An unnamed file: nothing to clean up however the process ends.
int open_spill_file(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  // File systems without O_TMPFILE: a named file, unlinked at once.
  std::string name = dir + "/.weft-timeline-XXXXXX";
  fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd >= 0) ::unlink(name.c_str());
  return fd;
}

// pwrite or pread until all of [data, data + size) went through.
template <typename Transfer, typename Bytes>
bool transfer_fully(Transfer transfer, int fd, Bytes* data, std::size_t size, off_t offset) {
  while (size > 0) {
    ssize_t n = transfer(fd, data, size, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
    offset += n;
  }
  return true;
}

bool write_fully(int fd, const void* data, std::size_t size, off_t offset) {
  return transfer_fully(::pwrite, fd, static_cast<const char*>(data), size, offset);
}

bool read_fully(int fd, void* data, std::size_t size, off_t offset) {
  return transfer_fully(::pread, fd, static_cast<char*>(data), size, offset);
}

}  // namespace

OpTimeline::OpTimeline(const std::string& spill_dir, std::atomic<uint32_t>* segment_sealed)
    : ring_(new uint8_t[kRingSegments * kSegmentBytes]()),
      spill_fd_(open_spill_file(spill_dir)),
      segment_sealed_(segment_sealed) {
  if (spill_fd_ < 0) {
    int error = errno;
    util::log_warn(util::Subsys::kColl, [&] {
      return "WEFT_TRACE: cannot make a spill file in " + spill_dir + " (" + std::strerror(error) +
             "); the timeline keeps only what its ring holds (" +
             std::to_string(kRingSegments * kSegmentBytes / 1024) + " KiB per group)";
    });
    limit_.store(kRingSegments, std::memory_order_relaxed);
  }
}

OpTimeline::~OpTimeline() {
  if (spill_fd_ >= 0) ::close(spill_fd_);
}

bool OpTimeline::start_next_segment() {
  if (used_ < kSegmentBytes) segment_bytes(segment_)[used_] = 0;  // the end marker
  uint64_t next = segment_ + 1;
  if (next >= limit_.load(std::memory_order_acquire)) return false;
  // The ring's slot for `next` still holds segment next - kRingSegments until it is spilled.
  if (next >= kRingSegments + spilled_.load(std::memory_order_acquire)) {
    spill_sealed_segments_before(next);
    if (next >= kRingSegments + spilled_.load(std::memory_order_acquire)) return false;
  }
  segment_ = next;
  used_ = 0;
  encoder_.start_segment();
  position_.store(segment_ * kSegmentBytes, std::memory_order_release);
  if (segment_sealed_ != nullptr) {
    segment_sealed_->fetch_add(1, std::memory_order_release);
    segment_sealed_->notify_one();
  }
  return true;
}

void OpTimeline::spill_sealed_segments() {
  spill_sealed_segments_before(position_.load(std::memory_order_acquire) / kSegmentBytes);
}

void OpTimeline::spill_sealed_segments_before(uint64_t end) {
  util::MutexLock lock(spill_mutex_);
  if (spill_fd_ < 0) return;
  uint64_t spilled = spilled_.load(std::memory_order_relaxed);
  for (; spilled < end; ++spilled) {
    if (!write_fully(spill_fd_, segment_bytes(spilled), kSegmentBytes,
                     static_cast<off_t>(spilled * kSegmentBytes))) {
      int error = errno;
      // What the ring holds stays readable; the writer stops before it would overwrite it.
      limit_.store(spilled + kRingSegments, std::memory_order_release);
      util::log_warn(util::Subsys::kColl, [&] {
        return std::string("WEFT_TRACE: cannot write the timeline's spill file (") +
               std::strerror(error) + "); the rest of this group's ops are left out";
      });
      return;
    }
    spilled_.store(spilled + 1, std::memory_order_release);
  }
}

void OpTimeline::for_each(const std::function<void(const TimelineEntry&)>& visit) const {
  uint64_t spilled = spilled_.load(std::memory_order_acquire);
  if (!visit_spilled(0, spilled, visit)) return;
  uint64_t position = position_.load(std::memory_order_acquire);
  uint64_t end_segment = position / kSegmentBytes + 1;  // the one being written, too
  if (end_segment <= spilled) return;
  std::vector<uint8_t> copied((end_segment - spilled) * kSegmentBytes);
  for (uint64_t segment = spilled; segment < end_segment; ++segment) {
    std::size_t size = segment + 1 < end_segment ? kSegmentBytes : position % kSegmentBytes;
    std::memcpy(&copied[(segment - spilled) * kSegmentBytes], segment_bytes(segment), size);
  }
  // Segment s's slot is rewritten by segment s + kRingSegments, which the writer starts only
  // once s is in the spill file: the copies of segments spilled since may be torn, the file's
  // are not.
  std::atomic_thread_fence(std::memory_order_acquire);
  uint64_t spilled_now = std::min(spilled_.load(std::memory_order_acquire), end_segment);
  if (!visit_spilled(spilled, spilled_now, visit)) return;
  for (uint64_t segment = spilled_now; segment < end_segment; ++segment) {
    std::size_t size = segment + 1 < end_segment ? kSegmentBytes : position % kSegmentBytes;
    decode_timeline_segment(&copied[(segment - spilled) * kSegmentBytes], size, visit);
  }
}

bool OpTimeline::visit_spilled(uint64_t first, uint64_t end,
                               const std::function<void(const TimelineEntry&)>& visit) const {
  std::vector<uint8_t> segment(kSegmentBytes);
  for (; first < end; ++first) {
    if (!read_fully(spill_fd_, segment.data(), kSegmentBytes,
                    static_cast<off_t>(first * kSegmentBytes))) {
      return false;
    }
    decode_timeline_segment(segment.data(), kSegmentBytes, visit);
  }
  return true;
}

}  // namespace weft::core
