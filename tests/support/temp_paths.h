// Paths in /tmp for the files a test makes: unique per process and call, so that tests running
// at once (ctest -j) or one after another never share one.
#pragma once

#include <unistd.h>

#include <atomic>
#include <string>

namespace weft::testing {

// Nothing is created: the caller makes (and removes) the file.
inline std::string unique_temp_path(const std::string& what) {
  static std::atomic<int> made{0};
  return "/tmp/weft_" + what + "_" + std::to_string(getpid()) + "_" + std::to_string(made++);
}

}  // namespace weft::testing
