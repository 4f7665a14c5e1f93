// WEFT_NET_ALPHA, WEFT_NET_BETA and WEFT_NET_GAMMA: the network a job describes to the selector,
// which prices the algorithms of groups not on shared memory with the cost model
// (coll/cost_model.h); WEFT_SHM_ALPHA and WEFT_SHM_BETA: the shared memory within a host, on
// which it prices the hierarchical algorithms' phases within hosts against flat ones. Each is
// optional: a part not set keeps the selector's own number (coll::selector_network_model()). The
// syntax is weft-model's --alpha, --beta and --gamma (util::parse_seconds,
// util::parse_seconds_per_byte).
//
// read_network_settings() parses the environment on each call and throws
// weft::Error(kInvalidArgument) naming the variable for a malformed value, and for one beyond
// any network (a latency above 1 s, a rate below 1 MB/s), which is most likely a missing unit
// ("WEFT_NET_ALPHA=10" is 10 seconds). Plain values; thread-safe.
#pragma once

#include <optional>
#include <string>

namespace weft::util {

struct NetworkSettings {
  std::optional<double> alpha_s;           // WEFT_NET_ALPHA: seconds per message
  std::optional<double> beta_s_per_byte;   // WEFT_NET_BETA: seconds per byte sent
  std::optional<double> gamma_s_per_byte;  // WEFT_NET_GAMMA: seconds per byte reduced
  // Within a host: a phase of a hierarchical algorithm over shared memory.
  std::optional<double> shm_alpha_s;          // WEFT_SHM_ALPHA: seconds per phase
  std::optional<double> shm_beta_s_per_byte;  // WEFT_SHM_BETA: seconds per byte copied

  bool any() const {
    return alpha_s || beta_s_per_byte || gamma_s_per_byte || shm_alpha_s || shm_beta_s_per_byte;
  }
  friend bool operator==(const NetworkSettings&, const NetworkSettings&) = default;
};

NetworkSettings read_network_settings();

// "alpha 10 us, beta 0.8 ns/B (10 Gbit/s)": the parts set, for a log line; "" when none is.
std::string describe(const NetworkSettings& settings);

}  // namespace weft::util
