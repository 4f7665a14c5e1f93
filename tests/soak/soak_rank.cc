// weft_soak_rank: one rank of the randomized differential soak (soak_runner.h). Started by
// weftrun or by run_soak_job.sh; every rank is given the same seed.
//
//   weft_soak_rank [--seed S] [--steps N] [--fault none|kill|stop] [--max-bytes B]
//                  [--init URL]
//
// The environment can say the same: WEFT_SOAK_SEED, WEFT_SOAK_STEPS, WEFT_SOAK_FAULT,
// WEFT_SOAK_INIT (e.g. file:///tmp/job/store; default env://). Flags win.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "soak_runner.h"
#include "weft/weft.h"

namespace {

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "weft_soak_rank: %s\nusage: weft_soak_rank [--seed S] [--steps N] "
               "[--fault none|kill|stop] [--max-bytes B] [--init URL]\n",
               why.c_str());
  std::exit(2);
}

uint64_t parse_number(const char* name, const std::string& text) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') usage(std::string(name) + ": not a number: '" + text + "'");
  return value;
}

weft::soak::Fault parse_fault(const std::string& text) {
  if (text == "none") return weft::soak::Fault::kNone;
  if (text == "kill") return weft::soak::Fault::kKill;
  if (text == "stop") return weft::soak::Fault::kStop;
  usage("--fault: expected none, kill or stop, got '" + text + "'");
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  std::string seed = env_or("WEFT_SOAK_SEED", "1");
  std::string steps = env_or("WEFT_SOAK_STEPS", "300");
  std::string fault = env_or("WEFT_SOAK_FAULT", "none");
  std::string init = env_or("WEFT_SOAK_INIT", "");
  std::string max_bytes = std::to_string(4 << 20);
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--seed") {
      seed = value;
    } else if (flag == "--steps") {
      steps = value;
    } else if (flag == "--fault") {
      fault = value;
    } else if (flag == "--max-bytes") {
      max_bytes = value;
    } else if (flag == "--init") {
      init = value;
    } else {
      usage("unknown flag " + flag);
    }
  }
  weft::soak::SoakConfig config;
  config.seed = parse_number("--seed", seed);
  config.steps = parse_number("--steps", steps);
  config.fault = parse_fault(fault);
  config.limits.max_bytes = parse_number("--max-bytes", max_bytes);
  if (config.limits.max_bytes < 64) usage("--max-bytes: at least 64");
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  weft::InitOptions options;
  options.init_method = init;
  try {
    weft::soak::SoakRunner runner(config, weft::init_process_group(options));
    return runner.run();
  } catch (const weft::Error& error) {
    std::printf("soak error seed=%s: before the first step: %s\n", seed.c_str(), error.what());
    return 1;
  }
}
