#include "util/network_settings.h"

#include <cstdio>
#include <string_view>

#include "util/settings.h"
#include "weft/error.h"

namespace weft::util {

namespace {

// Beyond these no network is: a value past them is a unit left out, not a slow link.
constexpr double kMaxAlphaSeconds = 1;
constexpr double kMaxSecondsPerByte = 1e-6;  // 1 MB/s

// What a variable describes, for its error: "network" or "shared memory".
const char* medium_of(std::string_view name) {
  return name.starts_with("WEFT_SHM_") ? "shared memory" : "network";
}

[[noreturn]] void implausible(std::string_view name, const std::string& value,
                              const std::string& reading, const char* example) {
  throw Error(ErrorCode::kInvalidArgument, std::string(name) + "='" + value + "' reads as " +
                                               reading + ", beyond any " + medium_of(name) +
                                               ": give a unit, e.g. " + example);
}

std::string number_text(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// `per`: what one latency is paid for ("message", "phase").
std::optional<double> read_latency(std::string_view name, const char* per, const char* example) {
  const std::string value = setting_string(name);
  if (value.empty()) return std::nullopt;
  const double seconds = parse_seconds(value, name);
  if (seconds > kMaxAlphaSeconds) {
    implausible(name, value, number_text("%g s per ", seconds) + per, example);
  }
  return seconds;
}

std::optional<double> read_per_byte(std::string_view name, const char* example) {
  const std::string value = setting_string(name);
  if (value.empty()) return std::nullopt;
  const double seconds_per_byte = parse_seconds_per_byte(value, name);
  if (seconds_per_byte > kMaxSecondsPerByte) {
    implausible(name, value, number_text("%g s per byte", seconds_per_byte), example);
  }
  return seconds_per_byte;
}

// "0.8 ns/B (1.25 GB/s)".
std::string per_byte_text(double seconds_per_byte) {
  if (seconds_per_byte <= 0) return "0 ns/B";
  return number_text("%.3g ns/B", seconds_per_byte * 1e9) +
         number_text(" (%.3g GB/s)", 1e-9 / seconds_per_byte);
}

}  // namespace

NetworkSettings read_network_settings() {
  NetworkSettings settings;
  settings.alpha_s = read_latency("WEFT_NET_ALPHA", "message", "10us");
  settings.beta_s_per_byte = read_per_byte("WEFT_NET_BETA", "10Gbit/s");
  settings.gamma_s_per_byte = read_per_byte("WEFT_NET_GAMMA", "16GB/s");
  settings.shm_alpha_s = read_latency("WEFT_SHM_ALPHA", "phase", "3us");
  settings.shm_beta_s_per_byte = read_per_byte("WEFT_SHM_BETA", "4GB/s");
  return settings;
}

std::string describe(const NetworkSettings& settings) {
  std::string text;
  auto add = [&](const std::string& part) { text += (text.empty() ? "" : ", ") + part; };
  if (settings.alpha_s) add(number_text("alpha %.3g us", *settings.alpha_s * 1e6));
  if (settings.beta_s_per_byte) add("beta " + per_byte_text(*settings.beta_s_per_byte));
  if (settings.gamma_s_per_byte) add("gamma " + per_byte_text(*settings.gamma_s_per_byte));
  if (settings.shm_alpha_s) add(number_text("shm alpha %.3g us", *settings.shm_alpha_s * 1e6));
  if (settings.shm_beta_s_per_byte) {
    add("shm beta " + per_byte_text(*settings.shm_beta_s_per_byte));
  }
  return text;
}

}  // namespace weft::util
