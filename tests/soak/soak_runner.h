// The soak's main loop on one rank: draws every step, runs the ones this rank takes part in
// (blocking, or async and waited later in a random order of this rank's own), checks each
// result, and, in the fault modes, kills or stops one rank at a drawn step and checks that the
// others fail promptly with an error naming it.
//
// Exit codes: 0 every result right (or, with a fault, every survivor failed as it must); 1 a
// wrong result or an error that should not have happened.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "soak_groups.h"
#include "soak_ops.h"
#include "soak_random.h"
#include "soak_steps.h"
#include "weft/error.h"
#include "weft/process_group.h"

namespace weft::soak {

enum class Fault { kNone, kKill, kStop };

struct SoakConfig {
  uint64_t seed = 1;
  uint64_t steps = 300;
  Fault fault = Fault::kNone;
  StepLimits limits;
};

class SoakRunner {
 public:
  SoakRunner(const SoakConfig& config, std::shared_ptr<ProcessGroup> world);
  int run();

 private:
  struct InFlight {
    std::unique_ptr<SoakOp> op;
    std::vector<std::shared_ptr<Work>> works;
    Step step;
    std::string group;
  };

  void run_steps();
  void run_step(const Step& step);
  void make_groups();
  void regroup();
  void check_or_exit(const SoakOp& op, const Step& step, const std::string& group) const;
  void wait_and_check(InFlight& entry);
  void wait_some();
  void drain();
  void inject_fault();
  Step fault_step_op(uint64_t index) const;
  int survivor_verdict(const Error& error);
  int unexpected_error(const Error& error) const;
  [[noreturn]] void report_mismatch(const Step& step, const std::string& group,
                                    const std::string& what) const;
  std::string prefix() const;  // "seed=.. rank=.."

  SoakConfig config_;
  std::shared_ptr<ProcessGroup> world_;
  int me_;
  int world_size_;     // kept: the world is released before a survivor's last words
  SoakRandom shared_;  // drawn identically on every rank
  SoakRandom local_;   // this rank's own: the order it waits in
  std::vector<GroupSlot> slots_;
  std::vector<InFlight> in_flight_;
  uint64_t fault_at_ = UINT64_MAX;
  int victim_ = -1;
  uint64_t step_ = 0;
  std::string current_;  // what the current step runs, for messages
  uint64_t ops_ = 0;
  uint64_t bytes_ = 0;
  std::chrono::steady_clock::time_point fault_entered_;
};

}  // namespace weft::soak
