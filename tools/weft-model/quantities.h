// The quantities weft-model reads on its command line: times ("5us", "2e-5", "1.5ms"), rates
// per byte ("10GB/s", "1.25Gbit/s", or seconds per byte as a plain number "8e-10"), sizes
// ("64K", "1M", binary multiples) and comma-separated lists of sizes and rank counts.
// Each parser throws std::invalid_argument (weft::Error for times and rates, which the
// library's WEFT_NET_* settings parse alike) naming the flag and the text it could not read.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace weft_model {

double parse_seconds(const std::string& flag, const std::string& text);
double parse_seconds_per_byte(const std::string& flag, const std::string& text);
std::size_t parse_size(const std::string& flag, const std::string& text);
std::vector<std::size_t> parse_sizes(const std::string& flag, const std::string& text);
std::vector<int> parse_ranks(const std::string& flag, const std::string& text);

// "64K", "1M", "16M" when exact, else the byte count.
std::string size_text(std::size_t bytes);
// "12.3 us", "4.56 ms", "1.23 s".
std::string time_text(double seconds);

}  // namespace weft_model
