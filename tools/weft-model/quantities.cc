#include "quantities.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "util/settings.h"

namespace weft_model {
namespace {

[[noreturn]] void unreadable(const std::string& flag, const std::string& text,
                             const char* expected) {
  throw std::invalid_argument(flag + ": cannot read '" + text + "' (expected " + expected + ")");
}

// The number at the start of text and what follows it; throws when there is no number.
std::pair<double, std::string> number_and_unit(const std::string& flag, const std::string& text,
                                               const char* expected) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    unreadable(flag, text, expected);
  }
  if (!std::isfinite(value) || value < 0) unreadable(flag, text, expected);
  return {value, text.substr(used)};
}

}  // namespace

// The library's parsers (util/settings.h): the WEFT_NET_* settings read the same syntax.
double parse_seconds(const std::string& flag, const std::string& text) {
  return weft::util::parse_seconds(text, flag);
}

double parse_seconds_per_byte(const std::string& flag, const std::string& text) {
  return weft::util::parse_seconds_per_byte(text, flag);
}

std::size_t parse_size(const std::string& flag, const std::string& text) {
  constexpr const char* kExpected = "a size such as 8, 64K, 1M or 1G";
  auto [value, unit] = number_and_unit(flag, text, kExpected);
  double scale = 1;
  if (unit == "K" || unit == "KiB")
    scale = 1024.0;
  else if (unit == "M" || unit == "MiB")
    scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GiB")
    scale = 1024.0 * 1024 * 1024;
  else if (!unit.empty() && unit != "B")
    unreadable(flag, text, kExpected);
  const double bytes = value * scale;
  if (bytes != std::floor(bytes) || bytes > 1e18) unreadable(flag, text, kExpected);
  return static_cast<std::size_t>(bytes);
}

std::vector<std::size_t> parse_sizes(const std::string& flag, const std::string& text) {
  std::vector<std::size_t> sizes;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    sizes.push_back(parse_size(flag, text.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return sizes;
}

std::vector<int> parse_ranks(const std::string& flag, const std::string& text) {
  std::vector<int> ranks;
  for (std::size_t size : parse_sizes(flag, text)) {
    if (size < 1 || size > (1u << 24)) {
      throw std::invalid_argument(flag + ": a group of " + std::to_string(size) +
                                  " ranks is out of range (1 to 16777216)");
    }
    ranks.push_back(static_cast<int>(size));
  }
  return ranks;
}

std::string size_text(std::size_t bytes) {
  constexpr std::pair<std::size_t, const char*> kUnits[] = {
      {std::size_t{1} << 30, "G"}, {std::size_t{1} << 20, "M"}, {std::size_t{1} << 10, "K"}};
  for (auto [unit, suffix] : kUnits) {
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + suffix;
  }
  return std::to_string(bytes);
}

std::string time_text(double seconds) {
  char text[32];
  if (seconds < 1e-3)
    std::snprintf(text, sizeof text, "%.1f us", seconds * 1e6);
  else if (seconds < 1)
    std::snprintf(text, sizeof text, "%.2f ms", seconds * 1e3);
  else
    std::snprintf(text, sizeof text, "%.3f s", seconds);
  return text;
}

}  // namespace weft_model
