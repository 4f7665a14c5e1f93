// Jobs started by other launchers, with no weft or torch variable set: real Open MPI mpirun and
// MPICH mpiexec when they are installed (skipped, saying so, when not), and a simulated srun
// (three processes with the variables srun would give them). Each rank runs
// weft_test_launched_rank: an all_reduce whose sum it checks, and one line saying what it read.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "api/launch_environment.h"
#include "support/child_processes.h"

extern char** environ;

namespace weft {
namespace {

using testing::ChildProcess;
using testing::ChildResult;

constexpr const char* kRankTimeoutSeconds = "60";          // each rank's rendezvous and all_reduce
constexpr const char* kLauncherTimeoutSeconds = "100";     // then timeout(1) stops the launcher
constexpr auto kTestDeadline = std::chrono::seconds(130);  // then the test kills what is left
constexpr int kRanks = 3;

std::optional<std::string> find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream directories(path ? path : "/usr/bin:/bin");
  std::string directory;
  while (std::getline(directories, directory, ':')) {
    std::string candidate = directory + "/" + name;
    if (!directory.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

// /usr/bin/env with -u for every variable of this process that could tell a rank where it is
// (weft's, torch's, and any launcher's this test may itself run under), so that the ranks see
// only what their launcher gives them.
std::vector<std::string> clean_environment_prefix() {
  std::vector<std::string> argv{"/usr/bin/env"};
  const std::set<std::string> torch_names = {
      "RANK",        "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
      "MASTER_PORT", "GROUP_RANK", "NODE_RANK",  "ROLE_RANK"};
  for (char** entry = environ; *entry; ++entry) {
    std::string name(*entry, std::string(*entry).find('='));
    bool launcher = false;
    for (const char* prefix :
         {"WEFT_", "TORCHELASTIC_", "SLURM_", "SLURMD_", "OMPI_", "PMI_", "PMIX_", "MPI_LOCAL"}) {
      launcher = launcher || name.rfind(prefix, 0) == 0;
    }
    if (launcher || torch_names.count(name)) {
      argv.push_back("-u");
      argv.push_back(name);
    }
  }
  return argv;
}

// One "LAUNCHED key=value ... launcher=NAME" line, as a map.
std::map<std::string, std::string> parse_launched(const std::string& line) {
  std::map<std::string, std::string> fields;
  std::size_t launcher = line.find(" launcher=");
  if (launcher != std::string::npos) fields["launcher"] = line.substr(launcher + 10);
  std::stringstream words(line.substr(0, launcher));
  std::string word;
  while (words >> word) {
    std::size_t equals = word.find('=');
    if (equals != std::string::npos) fields[word.substr(0, equals)] = word.substr(equals + 1);
  }
  return fields;
}

// Every rank's line from some output, keyed by rank.
std::map<int, std::map<std::string, std::string>> launched_lines(const std::string& out) {
  std::map<int, std::map<std::string, std::string>> ranks;
  std::stringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("LAUNCHED ", 0) != 0) continue;
    auto fields = parse_launched(line);
    ranks[std::stoi(fields["rank"])] = fields;
  }
  return ranks;
}

std::string describe(const ChildResult& result) {
  return "exit " + std::to_string(result.exit_code) + " signal " + std::to_string(result.signal) +
         (result.timed_out ? " (timed out)" : "") + "\nstdout:\n" + result.out + "\nstderr:\n" +
         result.err;
}

// Runs `launcher_argv` + the rank program under timeout(1), in a clean environment.
ChildResult run_launcher(const std::vector<std::string>& launcher_argv) {
  std::vector<std::string> argv = clean_environment_prefix();
  for (const char* word : {"timeout", "-k", "10", kLauncherTimeoutSeconds}) argv.push_back(word);
  argv.insert(argv.end(), launcher_argv.begin(), launcher_argv.end());
  argv.push_back(WEFT_LAUNCHED_RANK_PATH);
  argv.push_back(kRankTimeoutSeconds);
  ChildProcess launcher(argv, {});
  return launcher.wait(kTestDeadline);
}

// The checks every one-node MPI job passes: three ranks, each on this node, the right sum, one
// rendezvous on loopback.
void expect_one_node_job(const ChildResult& result, const std::string& launcher_name) {
  ASSERT_EQ(result.exit_code, 0) << describe(result);
  auto ranks = launched_lines(result.out);
  ASSERT_EQ(ranks.size(), static_cast<std::size_t>(kRanks)) << describe(result);
  std::set<std::string> local_ranks;
  for (auto& [rank, fields] : ranks) {
    EXPECT_EQ(fields["size"], std::to_string(kRanks)) << describe(result);
    EXPECT_EQ(fields["local_size"], std::to_string(kRanks)) << describe(result);
    EXPECT_EQ(fields["sum"], "ok") << describe(result);
    EXPECT_EQ(fields["launcher"], launcher_name) << describe(result);
    EXPECT_EQ(fields["rendezvous"].rfind("127.0.0.1:", 0), 0u) << describe(result);
    EXPECT_EQ(fields["rendezvous"], ranks.begin()->second["rendezvous"]) << describe(result);
    local_ranks.insert(fields["local_rank"]);
  }
  EXPECT_EQ(local_ranks, (std::set<std::string>{"0", "1", "2"})) << describe(result);
}

TEST(Launchers, OpenMpiMpirunWithNoWeftVariables) {
  std::optional<std::string> mpirun = find_in_path("mpirun.openmpi");
  if (!mpirun) mpirun = find_in_path("mpirun");
  if (!mpirun) {
    GTEST_SKIP() << "mpirun is not installed (apt-get install openmpi-bin): the Open MPI launch "
                    "test did not run";
  }
  ChildProcess version({*mpirun, "--version"}, {});
  ChildResult about = version.wait(std::chrono::seconds(20));
  // "mpirun (Open MPI) 4.1.4", or "mpirun.openmpi (OpenRTE) 4.1.4" under Debian's name.
  bool open_mpi = about.out.find("Open MPI") != std::string::npos ||
                  about.out.find("OpenRTE") != std::string::npos;
  if (!open_mpi) {
    GTEST_SKIP() << *mpirun << " is not Open MPI's (" << about.out.substr(0, 80)
                 << "): the Open MPI launch test did not run";
  }
  ChildResult result = run_launcher(
      {*mpirun, "--allow-run-as-root", "--oversubscribe", "-n", std::to_string(kRanks)});
  expect_one_node_job(result, "Open MPI");
}

TEST(Launchers, MpichMpiexecWithNoWeftVariables) {
  std::optional<std::string> mpiexec = find_in_path("mpiexec.hydra");
  if (!mpiexec) mpiexec = find_in_path("mpiexec.mpich");
  if (!mpiexec) {
    GTEST_SKIP() << "MPICH's mpiexec.hydra is not installed (apt-get install mpich): the MPICH "
                    "launch test did not run";
  }
  ChildResult result = run_launcher({*mpiexec, "-n", std::to_string(kRanks)});
  expect_one_node_job(result, "MPICH (Hydra)");
}

// srun's variables for three tasks of one step on two nodes, two tasks on the first. Only the
// first host of the node list is ever resolved: it is "localhost", so rank 0 serves the store on
// loopback; "sim-node02" stands for a second node that is this machine too (weft finds same-host
// peers by host identity, not by these variables).
TEST(Launchers, SimulatedSlurmWithNoWeftVariables) {
  const std::string job_id = std::to_string(getpid());  // apart from concurrent runs' ports
  const int local_ranks[kRanks] = {0, 1, 0};
  const int node_ids[kRanks] = {0, 0, 1};
  const char* node_names[] = {"localhost", "sim-node02"};
  std::vector<std::unique_ptr<ChildProcess>> tasks;
  for (int task = 0; task < kRanks; ++task) {
    std::map<std::string, std::string> env = {{"SLURM_PROCID", std::to_string(task)},
                                              {"SLURM_NTASKS", std::to_string(kRanks)},
                                              {"SLURM_STEP_NUM_TASKS", std::to_string(kRanks)},
                                              {"SLURM_LOCALID", std::to_string(local_ranks[task])},
                                              {"SLURM_NODEID", std::to_string(node_ids[task])},
                                              {"SLURMD_NODENAME", node_names[node_ids[task]]},
                                              {"SLURM_STEP_TASKS_PER_NODE", "2,1"},
                                              {"SLURM_TASKS_PER_NODE", "2,1"},
                                              {"SLURM_STEP_NODELIST", "localhost,sim-node02"},
                                              {"SLURM_NODELIST", "localhost,sim-node02"},
                                              {"SLURM_JOB_NODELIST", "localhost,sim-node[02-04]"},
                                              {"SLURM_JOB_ID", job_id},
                                              {"SLURM_STEP_ID", "0"}};
    // env -u removes what this process inherited, then NAME=VALUE sets what srun would.
    std::vector<std::string> argv = clean_environment_prefix();
    for (const auto& [name, value] : env) argv.push_back(name + "=" + value);
    argv.push_back(WEFT_LAUNCHED_RANK_PATH);
    argv.push_back(kRankTimeoutSeconds);
    tasks.push_back(std::make_unique<ChildProcess>(argv, std::map<std::string, std::string>{}));
  }
  const std::string rendezvous =
      "localhost:" + std::to_string(api::port_of_job(std::stoull(job_id), 0));
  auto deadline = std::chrono::steady_clock::now() + kTestDeadline;
  for (int task = 0; task < kRanks; ++task) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    ChildResult result = tasks[task]->wait(std::max(left, std::chrono::milliseconds(1)));
    ASSERT_EQ(result.exit_code, 0) << "task " << task << ": " << describe(result);
    auto ranks = launched_lines(result.out);
    ASSERT_EQ(ranks.count(task), 1u) << describe(result);
    auto& fields = ranks[task];
    EXPECT_EQ(fields["size"], std::to_string(kRanks));
    EXPECT_EQ(fields["local_rank"], std::to_string(local_ranks[task]));
    EXPECT_EQ(fields["local_size"], node_ids[task] == 0 ? "2" : "1");
    EXPECT_EQ(fields["rendezvous"], rendezvous);
    EXPECT_EQ(fields["sum"], "ok");
    EXPECT_EQ(fields["launcher"], "Slurm");
  }
}

}  // namespace
}  // namespace weft
