#include "transport/shm/shared_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace weft::transport {

SharedSegment::SharedSegment(SharedSegment&& other) noexcept
    : fd_(std::move(other.fd_)),
      base_(std::exchange(other.base_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

SharedSegment& SharedSegment::operator=(SharedSegment&& other) noexcept {
  if (this != &other) {
    if (base_) munmap(base_, bytes_);
    fd_ = std::move(other.fd_);
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

SharedSegment::~SharedSegment() {
  if (base_) munmap(base_, bytes_);
}

void* SharedSegment::map(int fd, std::size_t bytes) {
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) util::throw_system_error("mmap of a shared segment", errno);
  return base;
}

SharedSegment SharedSegment::create(const std::string& name, std::size_t bytes) {
  util::Fd fd(memfd_create(name.c_str(), MFD_CLOEXEC));
  if (!fd.valid()) util::throw_system_error("memfd_create", errno);
  if (ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
    util::throw_system_error("ftruncate of a shared segment", errno);
  }
  void* base = map(fd.get(), bytes);
  return SharedSegment(std::move(fd), base, bytes);
}

SharedSegment SharedSegment::attach(pid_t owner, int fd, std::size_t bytes) {
  std::string path = "/proc/" + std::to_string(owner) + "/fd/" + std::to_string(fd);
  util::Fd mine(open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!mine.valid()) util::throw_system_error("open " + path, errno);
  void* base = map(mine.get(), bytes);
  // The mapping keeps the memory alive; the descriptor is not needed any more.
  return SharedSegment(util::Fd(), base, bytes);
}

}  // namespace weft::transport
