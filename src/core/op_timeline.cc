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
    : ring_(new Slot[kRingEntries]),
      spill_fd_(open_spill_file(spill_dir)),
      owner_pid_(::getpid()),
      segment_sealed_(segment_sealed) {
  if (spill_fd_ < 0) {
    int error = errno;
    util::log_warn(util::Subsys::kColl, [&] {
      return "WEFT_TRACE: cannot make a spill file in " + spill_dir + " (" + std::strerror(error) +
             "); the timeline keeps only what its ring holds (" + std::to_string(kRingEntries) +
             " ops per group)";
    });
    limit_.store(kRingSegments, std::memory_order_relaxed);
  }
}

OpTimeline::~OpTimeline() {
  if (spill_fd_ >= 0) ::close(spill_fd_);
}

bool OpTimeline::start_segment_at(uint64_t position) {
  uint64_t segment = position / kSegmentEntries;
  if (segment >= limit_.load(std::memory_order_acquire)) return false;
  // The ring's slots for `segment` still hold segment - kRingSegments until it is spilled.
  if (segment >= kRingSegments + spilled_.load(std::memory_order_acquire)) {
    spill_sealed_segments_before(segment);
    if (segment >= kRingSegments + spilled_.load(std::memory_order_acquire)) return false;
  }
  segment_end_ = (segment + 1) * kSegmentEntries;
  if (segment > 0 && segment_sealed_ != nullptr) {
    segment_sealed_->fetch_add(1, std::memory_order_release);
    segment_sealed_->notify_one();
  }
  return true;
}

void OpTimeline::spill_sealed_segments() {
  spill_sealed_segments_before(position_.load(std::memory_order_acquire) / kSegmentEntries);
}

void OpTimeline::spill_sealed_segments_before(uint64_t end) {
  util::MutexLock lock(spill_mutex_);
  if (spill_fd_ < 0) return;
  uint64_t spilled = spilled_.load(std::memory_order_relaxed);
  for (; spilled < end; ++spilled) {
    if (!spill_segment(spilled)) {
      // What the ring holds stays readable; the writer stops before it would overwrite it.
      limit_.store(spilled + kRingSegments, std::memory_order_release);
      return;
    }
    spilled_.store(spilled + 1, std::memory_order_release);
  }
}

bool OpTimeline::spill_segment(uint64_t segment) {
  if (::getpid() != owner_pid_) return false;  // the file is the parent's: keep to the ring
  encoded_.resize(sizeof(uint32_t) + kSegmentEntries * TimelineEncoder::kMaxEncodedBytes);
  TimelineEncoder encoder;
  std::size_t used = sizeof(uint32_t);
  for (uint64_t position = segment * kSegmentEntries; position < (segment + 1) * kSegmentEntries;
       ++position) {
    used += encoder.encode(slot(position).load(), encoded_.data() + used);
  }
  auto size = static_cast<uint32_t>(used - sizeof(uint32_t));
  std::memcpy(encoded_.data(), &size, sizeof size);
  if (static_cast<uint64_t>(spill_end_) + used > kMaxSpillBytes) {
    util::log_warn(util::Subsys::kColl, [&] {
      return "WEFT_TRACE: a timeline's spill file reached " + std::to_string(kMaxSpillBytes >> 30) +
             " GiB; the rest of this group's ops are left out";
    });
    return false;
  }
  if (!write_fully(spill_fd_, encoded_.data(), used, spill_end_)) {
    int error = errno;
    util::log_warn(util::Subsys::kColl, [&] {
      return std::string("WEFT_TRACE: cannot write the timeline's spill file (") +
             std::strerror(error) + "); the rest of this group's ops are left out";
    });
    return false;
  }
  spill_end_ += static_cast<off_t>(used);
  return true;
}

void OpTimeline::for_each(const std::function<void(const TimelineEntry&)>& visit) const {
  off_t offset = 0;
  uint64_t spilled = spilled_.load(std::memory_order_acquire);
  if (!visit_spilled(0, spilled, offset, visit)) return;
  uint64_t position = position_.load(std::memory_order_acquire);
  uint64_t first = spilled * kSegmentEntries;
  if (position <= first) return;
  std::vector<TimelineEntry> copied;
  copied.reserve(position - first);
  for (uint64_t at = first; at < position; ++at) copied.push_back(slot(at).load());
  // Segment s's slots are rewritten by segment s + kRingSegments, which the writer starts only
  // once s is in the spill file: the copies of segments spilled since may be torn, the file's
  // are not.
  std::atomic_thread_fence(std::memory_order_acquire);
  uint64_t end_segment = (position + kSegmentEntries - 1) / kSegmentEntries;
  uint64_t spilled_now = std::min(spilled_.load(std::memory_order_acquire), end_segment);
  if (!visit_spilled(spilled, spilled_now, offset, visit)) return;
  for (uint64_t at = std::max(first, spilled_now * kSegmentEntries); at < position; ++at) {
    visit(copied[at - first]);
  }
}

bool OpTimeline::visit_spilled(uint64_t first, uint64_t end, off_t& offset,
                               const std::function<void(const TimelineEntry&)>& visit) const {
  std::vector<uint8_t> segment;
  for (; first < end; ++first) {
    uint32_t size = 0;
    if (!read_fully(spill_fd_, &size, sizeof size, offset)) return false;
    segment.resize(size);
    if (!read_fully(spill_fd_, segment.data(), size, offset + static_cast<off_t>(sizeof size))) {
      return false;
    }
    offset += static_cast<off_t>(sizeof size + size);
    decode_timeline_segment(segment.data(), size, visit);
  }
  return true;
}

}  // namespace weft::core
