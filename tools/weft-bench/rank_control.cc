#include "rank_control.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>

namespace weft_bench {
namespace {

constexpr int kControlTag = 0x7E57;

}  // namespace

std::vector<double> RankControl::max_over_ranks(std::vector<double> values) {
  const int n = group_.size();
  if (n == 1) return values;
  weft::BufferView view(values.data(), values.size(), weft::DType::kFloat64);
  if (group_.rank() == 0) {
    std::vector<double> theirs(values.size());
    weft::BufferView their_view(theirs.data(), theirs.size(), weft::DType::kFloat64);
    for (int r = 1; r < n; ++r) {
      group_.recv(their_view, r, kControlTag);
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::max(values[i], theirs[i]);
    }
    for (int r = 1; r < n; ++r) group_.send(view, r, kControlTag);
  } else {
    group_.send(view, 0, kControlTag);
    group_.recv(view, 0, kControlTag);
  }
  return values;
}

std::vector<std::string> RankControl::roll_call() {
  std::array<char, 128> mine{};
  char host[64] = "?";
  if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "?");
  std::snprintf(mine.data(), mine.size(), "Pid %6d on %s", static_cast<int>(getpid()), host);
  weft::BufferView view(mine.data(), mine.size(), weft::DType::kUInt8);
  if (group_.rank() != 0) {
    group_.send(view, 0, kControlTag);
    return {};
  }
  std::vector<std::string> lines{mine.data()};
  for (int r = 1; r < group_.size(); ++r) {
    std::array<char, 128> theirs{};
    group_.recv(weft::BufferView(theirs.data(), theirs.size(), weft::DType::kUInt8), r,
                kControlTag);
    theirs.back() = '\0';
    lines.emplace_back(theirs.data());
  }
  return lines;
}

}  // namespace weft_bench
