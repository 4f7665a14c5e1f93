#include "util/log_startup.h"

#include <atomic>
#include <cstdlib>
#include <string_view>

#include "util/log.h"
#include "util/settings.h"
#include "weft/version.h"

extern char** environ;

namespace weft::util {

namespace {

// Values a log must never show: anyone who reads it could join the job.
bool is_secret(std::string_view name) { return name == "WEFT_JOB_TOKEN"; }

bool is_declared(std::string_view name) {
  for (const SettingSpec& spec : all_settings()) {
    if (spec.name == name) return true;
  }
  return false;
}

void append_word(std::string& list, const std::string& word) {
  if (!list.empty()) list += ' ';
  list += word;
}

}  // namespace

std::string describe_settings_in_environment() {
  std::string described;
  for (const SettingSpec& spec : all_settings()) {
    const char* value = std::getenv(std::string(spec.name).c_str());
    if (value == nullptr) continue;
    append_word(described,
                std::string(spec.name) + "=" + (is_secret(spec.name) ? "(hidden)" : value));
  }
  return described;
}

std::string unknown_weft_variables() {
  std::string names;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view variable(*entry);
    std::string_view name = variable.substr(0, variable.find('='));
    if (name.rfind("WEFT_", 0) == 0 && !is_declared(name)) append_word(names, std::string(name));
  }
  return names;
}

void log_startup_once() {
  static std::atomic<bool> logged{false};
  if (logged.exchange(true)) return;
  log_info(Subsys::kInit, [] { return std::string("weft ") + version(); });
  log_info(Subsys::kInit, [] {
    std::string settings = describe_settings_in_environment();
    return "settings: " + (settings.empty() ? std::string("none set (defaults)") : settings);
  });
  if (!log_enabled(LogLevel::kInfo, Subsys::kInit)) return;
  std::string unknown = unknown_weft_variables();
  if (!unknown.empty()) {
    log_info(Subsys::kInit,
             [&] { return "WEFT_* variables that are not weft settings: " + unknown; });
  }
}

}  // namespace weft::util
