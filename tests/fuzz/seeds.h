// Seed inputs for a fuzz target, made by weft's own encoders rather than committed as blobs.
// run_fuzzers.sh runs each target once with WEFT_FUZZ_WRITE_SEEDS=<corpus directory>: the
// target writes its seeds there and exits, then is run on that corpus.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace weft::fuzz {

using Bytes = std::vector<uint8_t>;

// When WEFT_FUZZ_WRITE_SEEDS names a directory: writes each seed there as seed-<i> and exits.
inline void write_seeds_if_asked(const std::vector<Bytes>& seeds) {
  const char* directory = std::getenv("WEFT_FUZZ_WRITE_SEEDS");
  if (!directory || !*directory) return;
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    std::string path = std::string(directory) + "/seed-" + std::to_string(i);
    std::FILE* file = std::fopen(path.c_str(), "wb");
    if (!file) {
      std::perror(path.c_str());
      std::exit(1);
    }
    std::fwrite(seeds[i].data(), 1, seeds[i].size(), file);
    std::fclose(file);
  }
  std::exit(0);
}

inline void append(Bytes& to, const Bytes& more) { to.insert(to.end(), more.begin(), more.end()); }

}  // namespace weft::fuzz
