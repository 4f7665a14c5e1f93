// Paths in /tmp for the files a test makes: unique per process and call, so that tests running
// at once (ctest -j) or one after another never share one.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <system_error>

namespace weft::testing {

// Nothing is created: the caller makes (and removes) the file.
inline std::string unique_temp_path(const std::string& what) {
  static std::atomic<int> made{0};
  return "/tmp/weft_" + what + "_" + std::to_string(getpid()) + "_" + std::to_string(made++);
}

// A scratch directory, removed with everything in it when the object goes.
class TempDir {
 public:
  explicit TempDir(const std::string& what = "test") {
    std::string pattern =
        (std::filesystem::temp_directory_path() / ("weft_" + what + ".XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::system_error(errno, std::generic_category());
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace weft::testing
