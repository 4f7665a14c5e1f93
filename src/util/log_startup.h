// What a process says at INFO once, when it first joins a job: weft's version and the WEFT_*
// settings its environment sets, so that a log shows how the run was configured.
#pragma once

#include <string>

namespace weft::util {

// "WEFT_DEBUG=info WEFT_JOB_TOKEN=(hidden)": the declared settings set in the environment, in
// the table's order (a secret's value hidden); "" when none is.
std::string describe_settings_in_environment();

// WEFT_* variables of the environment that are not settings (typos, launchers' own), by name.
std::string unknown_weft_variables();

// Logs the version and the settings (subsystem init), the first time only.
void log_startup_once();

}  // namespace weft::util
