// DescriptorsTaken — takes up this process's file descriptors, for tests of what runs out of
// them (an accept loop, a store server): lowers the soft RLIMIT_NOFILE to 256 and opens
// /dev/null until none is left but `spare`. give_back() (or the destructor) closes them and
// restores the limit. Thread-safety: the limit is the process's; one at a time.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <vector>

#include "util/socket.h"

namespace weft::testing {

class DescriptorsTaken {
 public:
  explicit DescriptorsTaken(int spare = 0) {
    EXPECT_EQ(getrlimit(RLIMIT_NOFILE, &old_limit_), 0);
    rlimit low = old_limit_;
    low.rlim_cur = 256;
    EXPECT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
    for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) filler_.emplace_back(fd);
    EXPECT_GT(filler_.size(), static_cast<std::size_t>(spare));
    for (int i = 0; i < spare && !filler_.empty(); ++i) filler_.pop_back();
  }
  ~DescriptorsTaken() { give_back(); }
  DescriptorsTaken(const DescriptorsTaken&) = delete;
  DescriptorsTaken& operator=(const DescriptorsTaken&) = delete;

  void give_back() {
    filler_.clear();
    setrlimit(RLIMIT_NOFILE, &old_limit_);
  }

 private:
  rlimit old_limit_{};
  std::vector<util::Fd> filler_;
};

}  // namespace weft::testing
