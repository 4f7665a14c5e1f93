// SharedSegment — a block of memory mapped by several processes of one host.
//
// The owner makes it from a memfd, which has no name in any file system: when the last
// process that maps it exits — normally, by a crash, or by SIGKILL of the whole job — the
// kernel frees it, and nothing is left in /dev/shm. Other processes attach through the
// owner's /proc/<pid>/fd/<fd> (same user, same pid namespace), which the owner keeps open
// until they have. Ranks that are threads of one process attach the same way.
// Ownership: each SharedSegment unmaps its own mapping when destroyed. Not thread-safe to
// move; the memory itself is shared and synchronised by its users.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "util/socket.h"

namespace weft::transport {

class SharedSegment {
 public:
  SharedSegment() = default;
  SharedSegment(SharedSegment&& other) noexcept;
  SharedSegment& operator=(SharedSegment&& other) noexcept;
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;
  ~SharedSegment();

  // A new zero-filled segment of `bytes`. Throws weft::Error(kSystem) naming the call that
  // failed.
  static SharedSegment create(const std::string& name, std::size_t bytes);
  // Maps the segment that process `owner` holds open as descriptor `fd`. Throws
  // weft::Error(kSystem) when the kernel refuses (another user, another pid namespace).
  static SharedSegment attach(pid_t owner, int fd, std::size_t bytes);

  void* base() const { return base_; }
  std::size_t size() const { return bytes_; }
  // The descriptor others attach through (the owner's; -1 once closed or on attachers).
  int fd() const { return fd_.get(); }
  // Closes the descriptor; the mapping stays valid.
  void close_fd() { fd_.reset(); }

 private:
  SharedSegment(util::Fd fd, void* base, std::size_t bytes)
      : fd_(std::move(fd)), base_(base), bytes_(bytes) {}
  static void* map(int fd, std::size_t bytes);

  util::Fd fd_;
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace weft::transport
