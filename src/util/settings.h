// The one table of WEFT_* settings: name, type, default, meaning (docs/env.md lists the same).
//
// Every WEFT_* variable weft reads is declared in settings.cc and read through these getters,
// which parse the environment on each call (cheap, and tests may change it). A malformed value
// throws weft::Error(kInvalidArgument) naming the variable; it is never silently replaced by
// the default. Asking for a name that is not in the table is a bug (kInternal).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace weft::util {

enum class SettingType { kString, kInt, kBool, kDuration, kChoice };

struct SettingSpec {
  std::string_view name;
  SettingType type;
  std::string_view default_value;
  std::string_view choices;  // "a|b|c" for kChoice
  std::string_view meaning;
};

const std::vector<SettingSpec>& all_settings();

std::string setting_string(std::string_view name);
int64_t setting_int(std::string_view name);
bool setting_bool(std::string_view name);
// Accepts "30" (seconds), "1.5s", "250ms", "2m".
std::chrono::milliseconds setting_duration(std::string_view name);
// One of the declared choices.
std::string setting_choice(std::string_view name);

// Parses a duration in the syntax above; throws kInvalidArgument naming `what`.
std::chrono::milliseconds parse_duration(std::string_view text, std::string_view what);

// The cost model's quantities, in weft-model's syntax (its --alpha, --beta and --gamma; the
// WEFT_NET_* settings, util/network_settings.h). Both throw kInvalidArgument naming `what`
// for anything else, and for negative or non-finite numbers.
// A time in seconds: "5us", "0.1ms", "50ns", "2e-5" or "2e-5s" (a bare number is seconds).
double parse_seconds(std::string_view text, std::string_view what);
// Seconds per byte, from a rate ("10GB/s", "800MB/s", "100Gbit/s", "100Gb/s", "400Mbit/s",
// decimal multiples) or a bare number of seconds per byte ("8e-10"). A rate must be above 0.
double parse_seconds_per_byte(std::string_view text, std::string_view what);

}  // namespace weft::util
