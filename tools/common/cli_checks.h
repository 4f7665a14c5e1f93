// Validators the tools' command lines share (CLI11).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <type_traits>

namespace weft::cli {

// What is wrong with `text` as a decimal integer, or "" when nothing is.
inline std::string not_decimal(const std::string& text) {
  const std::size_t sign = text.size() > 1 && text[0] == '-' ? 1 : 0;
  const bool digits_only =
      sign < text.size() && text.find_first_not_of("0123456789", sign) == std::string::npos;
  const bool leading_zero = text.size() - sign > 1 && text[sign] == '0';
  return digits_only && !leading_zero ? "" : "expects a decimal integer, got '" + text + "'";
}

// CLI::Range without its description, which CLI11 would add to the flag's type in messages
// ("--iters: 1 required INT:INT in [1 - 1099511627776] missing"); the help text says the range.
// Integers must be written in decimal: CLI11 alone reads "010" as 8 and accepts "0x10", which
// no user of torchrun, mpirun or nccl-tests expects.
template <typename T>
CLI::Validator within(T min, T max) {
  CLI::Validator range = CLI::Range(min, max).description("");
  if constexpr (!std::is_integral_v<T>) {
    return range;
  } else {
    return CLI::Validator(
        [range](std::string& text) {
          std::string wrong = not_decimal(text);
          return wrong.empty() ? range(text) : wrong;
        },
        "");
  }
}

}  // namespace weft::cli
