#include "api/launch_environment.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "support/errors.h"
#include "util/socket.h"
#include "weft/error.h"
#include "weft/init.h"

namespace weft {
namespace {

using api::LaunchEnvironment;
using api::Launcher;
using api::LaunchProbes;
using testing::error_of;
using Variables = std::map<std::string, std::string>;

LaunchEnvironment read(const Variables& variables,
                       std::optional<int64_t> hydra_proxy = std::nullopt) {
  LaunchProbes probes;
  probes.variable = [&](const char* name) -> std::optional<std::string> {
    auto found = variables.find(name);
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
  probes.hydra_proxy_pid = [=] { return hydra_proxy; };
  return api::read_launch_environment(probes);
}

// The message of the error reading `variables` raises, checked to name every one of `names`.
std::string error_naming(const Variables& variables, std::initializer_list<const char*> names) {
  Error error = error_of([&] { read(variables); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  std::string message = error.what();
  for (const char* name : names) {
    EXPECT_NE(message.find(name), std::string::npos) << "no " << name << " in: " << message;
  }
  return message;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// What Open MPI 4.1's mpirun -n 3 exports to rank 1 on one node (trimmed).
Variables open_mpi_rank_1_of_3() {
  return {{"OMPI_COMM_WORLD_RANK", "1"},       {"OMPI_COMM_WORLD_SIZE", "3"},
          {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"},
          {"OMPI_COMM_WORLD_NODE_RANK", "1"},  {"OMPI_MCA_ess_base_jobid", "793247745"},
          {"OMPI_MCA_orte_num_nodes", "1"},    {"PMIX_RANK", "1"},
          {"PMIX_NAMESPACE", "793247745"}};
}

// What MPICH 4.0's mpiexec -n 3 exports to rank 2 on one node.
Variables hydra_rank_2_of_3() {
  return {{"PMI_RANK", "2"},        {"PMI_SIZE", "3"},
          {"PMI_FD", "8"},          {"MPI_LOCALRANKID", "2"},
          {"MPI_LOCALNRANKS", "3"}, {"MPIR_CVAR_CH3_INTERFACE_HOSTNAME", "vm"}};
}

// What srun exports to task 3 of 6 in step 2 of job 4242, on the second of three nodes.
Variables slurm_task_3_of_6() {
  return {{"SLURM_PROCID", "3"},
          {"SLURM_NTASKS", "6"},
          {"SLURM_STEP_NUM_TASKS", "6"},
          {"SLURM_LOCALID", "1"},
          {"SLURM_NODEID", "1"},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x3)"},
          {"SLURM_TASKS_PER_NODE", "2(x3)"},
          {"SLURM_STEP_NODELIST", "node[01-03]"},
          {"SLURM_NODELIST", "node[01-03]"},
          {"SLURM_JOB_NODELIST", "node[01-03]"},
          {"SLURMD_NODENAME", "node02"},
          {"SLURM_JOB_ID", "4242"},
          {"SLURM_JOBID", "4242"},
          {"SLURM_STEP_ID", "1"},
          {"SLURM_STEPID", "1"}};
}

TEST(LaunchEnvironment, NothingSetReadsNothing) {
  LaunchEnvironment environment = read({});
  EXPECT_EQ(environment.launcher, Launcher::kUnknown);
  EXPECT_FALSE(environment.rank || environment.world_size || environment.local_rank ||
               environment.local_world_size || environment.master_addr || environment.master_port ||
               environment.torch_agent_store_prefix);
  EXPECT_EQ(environment.master_addr_advice, "");
  EXPECT_EQ(environment.master_port_advice, "");
}

TEST(LaunchEnvironment, TorchNamesComeFirst) {
  Variables variables = open_mpi_rank_1_of_3();
  variables.insert({{"RANK", "2"},
                    {"WORLD_SIZE", "8"},
                    {"LOCAL_RANK", "0"},
                    {"LOCAL_WORLD_SIZE", "4"},
                    {"MASTER_ADDR", "head"},
                    {"MASTER_PORT", "29500"}});
  LaunchEnvironment environment = read(variables);
  EXPECT_EQ(environment.rank, 2);
  EXPECT_EQ(environment.world_size, 8);
  EXPECT_EQ(environment.local_rank, 0);
  EXPECT_EQ(environment.local_world_size, 4);
  EXPECT_EQ(environment.master_addr, "head");
  EXPECT_EQ(environment.master_port, 29500);
  EXPECT_EQ(environment.master_addr_origin, "");
  EXPECT_EQ(environment.master_port_origin, "");
}

TEST(LaunchEnvironment, TorchrunsAgentStoreGetsAPrefixPerRunAndRestart) {
  LaunchEnvironment environment = read({{"RANK", "0"},
                                        {"WORLD_SIZE", "2"},
                                        {"MASTER_ADDR", "127.0.0.1"},
                                        {"MASTER_PORT", "29500"},
                                        {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                        {"TORCHELASTIC_RUN_ID", "abc"},
                                        {"TORCHELASTIC_RESTART_COUNT", "2"}});
  EXPECT_EQ(environment.torch_agent_store_prefix, "weft/abc/2");
}

TEST(LaunchEnvironment, OpenMpiOnOneNode) {
  LaunchEnvironment environment = read(open_mpi_rank_1_of_3());
  EXPECT_EQ(environment.launcher, Launcher::kOpenMpi);
  EXPECT_EQ(environment.rank, 1);
  EXPECT_EQ(environment.world_size, 3);
  EXPECT_EQ(environment.local_rank, 1);
  EXPECT_EQ(environment.local_world_size, 3);
  EXPECT_EQ(environment.master_addr, "127.0.0.1");
  EXPECT_EQ(environment.master_port, api::port_of_job_text("793247745"));
  EXPECT_EQ(environment.master_port, 31645);
  EXPECT_TRUE(contains(environment.master_port_origin, "OMPI_MCA_ess_base_jobid=793247745"))
      << environment.master_port_origin;
}

TEST(LaunchEnvironment, OpenMpisOtherJobIdSpellings) {
  Variables older = open_mpi_rank_1_of_3();
  older.erase("OMPI_MCA_ess_base_jobid");
  older.erase("PMIX_NAMESPACE");
  older["OMPI_MCA_orte_ess_jobid"] = "12345";
  EXPECT_EQ(read(older).master_port, api::port_of_job_text("12345"));
  Variables newer = open_mpi_rank_1_of_3();
  newer.erase("OMPI_MCA_ess_base_jobid");
  newer["PMIX_NAMESPACE"] = "prterun-vm-1234@1";
  EXPECT_EQ(read(newer).master_port, api::port_of_job_text("prterun-vm-1234@1"));
  Variables none = open_mpi_rank_1_of_3();
  none.erase("OMPI_MCA_ess_base_jobid");
  none.erase("PMIX_NAMESPACE");
  LaunchEnvironment environment = read(none);
  EXPECT_FALSE(environment.master_port);
  EXPECT_TRUE(contains(environment.master_port_advice, "mpirun -x MASTER_PORT="))
      << environment.master_port_advice;
}

TEST(LaunchEnvironment, OpenMpiAcrossNodesAsksForMasterAddr) {
  Variables variables = open_mpi_rank_1_of_3();
  variables["OMPI_COMM_WORLD_SIZE"] = "6";
  LaunchEnvironment environment = read(variables);
  EXPECT_FALSE(environment.master_addr);
  EXPECT_TRUE(contains(environment.master_addr_advice, "env:// needs MASTER_ADDR"));
  EXPECT_TRUE(contains(environment.master_addr_advice, "OMPI_COMM_WORLD_LOCAL_SIZE=3"));
  EXPECT_TRUE(contains(environment.master_addr_advice, "OMPI_COMM_WORLD_SIZE=6"));
  EXPECT_TRUE(contains(environment.master_addr_advice, "mpirun -x MASTER_ADDR=<first host>"))
      << environment.master_addr_advice;
  // The job id is the same on every node: the port is still derived.
  EXPECT_EQ(environment.master_port, 31645);

  variables["MASTER_ADDR"] = "node01";
  environment = read(variables);
  EXPECT_EQ(environment.master_addr, "node01");
  EXPECT_EQ(environment.master_port, 31645);
}

TEST(LaunchEnvironment, HydraOnOneNode) {
  LaunchEnvironment environment = read(hydra_rank_2_of_3(), /*hydra_proxy=*/1234);
  EXPECT_EQ(environment.launcher, Launcher::kHydra);
  EXPECT_EQ(environment.rank, 2);
  EXPECT_EQ(environment.world_size, 3);
  EXPECT_EQ(environment.local_rank, 2);
  EXPECT_EQ(environment.local_world_size, 3);
  EXPECT_EQ(environment.master_addr, "127.0.0.1");
  EXPECT_EQ(environment.master_port, api::port_of_job_text("hydra_pmi_proxy:1234"));
  EXPECT_EQ(environment.master_port, 25653);

  environment = read(hydra_rank_2_of_3(), /*hydra_proxy=*/std::nullopt);
  EXPECT_FALSE(environment.master_port);
  EXPECT_TRUE(contains(environment.master_port_advice, "no hydra_pmi_proxy"));
  EXPECT_TRUE(contains(environment.master_port_advice, "mpiexec -genv MASTER_PORT <port>"))
      << environment.master_port_advice;
}

TEST(LaunchEnvironment, HydraAcrossNodesAsksForBoth) {
  Variables variables = hydra_rank_2_of_3();
  variables["PMI_SIZE"] = "6";
  LaunchEnvironment environment = read(variables, /*hydra_proxy=*/1234);
  EXPECT_FALSE(environment.master_addr);
  EXPECT_FALSE(environment.master_port);  // each node has its own proxy
  EXPECT_TRUE(contains(environment.master_addr_advice, "mpiexec -genv MASTER_ADDR <first host>"))
      << environment.master_addr_advice;
  EXPECT_TRUE(contains(environment.master_port_advice, "on several nodes"))
      << environment.master_port_advice;
}

TEST(LaunchEnvironment, Slurm) {
  LaunchEnvironment environment = read(slurm_task_3_of_6());
  EXPECT_EQ(environment.launcher, Launcher::kSlurm);
  EXPECT_EQ(environment.rank, 3);
  EXPECT_EQ(environment.world_size, 6);
  EXPECT_EQ(environment.local_rank, 1);
  EXPECT_EQ(environment.local_world_size, 2);
  EXPECT_EQ(environment.master_addr, "node01");
  EXPECT_EQ(environment.master_addr_origin, "first host of SLURM_STEP_NODELIST");
  EXPECT_EQ(environment.master_port, api::port_of_job(4242, 1));
  EXPECT_EQ(environment.master_port, 21153);  // docs/launching.md's example
  EXPECT_TRUE(contains(environment.master_port_origin, "SLURM_JOB_ID=4242 and SLURM_STEP_ID=1"))
      << environment.master_port_origin;
}

TEST(LaunchEnvironment, SlurmPrefersTheStepsNodesAndTasks) {
  Variables variables = slurm_task_3_of_6();
  variables["SLURM_STEP_NODELIST"] = "node[02-03]";  // srun -r 1: the step skips node01
  variables["SLURM_NODELIST"] = "node[02-03]";
  variables["SLURM_STEP_TASKS_PER_NODE"] = "3(x2)";
  variables["SLURM_NODEID"] = "0";
  variables["SLURMD_NODENAME"] = "node02";
  variables["SLURM_TASKS_PER_NODE"] = "2(x3)";  // the job's
  LaunchEnvironment environment = read(variables);
  EXPECT_EQ(environment.master_addr, "node02");
  EXPECT_EQ(environment.local_world_size, 3);

  // The batch script's own variables, outside any step.
  environment = read({{"SLURM_PROCID", "0"},
                      {"SLURM_NTASKS", "3"},
                      {"SLURM_LOCALID", "0"},
                      {"SLURM_NODEID", "0"},
                      {"SLURM_TASKS_PER_NODE", "2,1"},
                      {"SLURM_JOB_NODELIST", "gpu[7,9]"},
                      {"SLURM_JOB_ID", "4242"}});
  EXPECT_EQ(environment.master_addr, "gpu7");
  EXPECT_EQ(environment.master_addr_origin, "first host of SLURM_JOB_NODELIST");
  EXPECT_EQ(environment.local_world_size, 2);
  EXPECT_EQ(environment.master_port, api::port_of_job(4242, 0));
  EXPECT_TRUE(contains(environment.master_port_origin, "no step id"))
      << environment.master_port_origin;
}

TEST(LaunchEnvironment, SlurmTasksPerNodeIndexedByNodeId) {
  Variables variables = {{"SLURM_PROCID", "0"},
                         {"SLURM_NTASKS", "7"},
                         {"SLURM_LOCALID", "0"},
                         {"SLURM_TASKS_PER_NODE", "2(x3),1"}};
  for (auto [node, tasks] : {std::pair{"0", 2}, {"2", 2}, {"3", 1}}) {
    variables["SLURM_NODEID"] = node;
    EXPECT_EQ(read(variables).local_world_size, tasks) << "node " << node;
  }
  variables["SLURM_NODEID"] = "4";
  error_naming(variables, {"SLURM_NODEID=4", "SLURM_TASKS_PER_NODE='2(x3),1'", "4 nodes"});
  // Without SLURM_NODEID only an even list tells.
  variables.erase("SLURM_NODEID");
  EXPECT_FALSE(read(variables).local_world_size);
  variables["SLURM_TASKS_PER_NODE"] = "2(x3)";
  variables["SLURM_NTASKS"] = "6";
  EXPECT_EQ(read(variables).local_world_size, 2);
}

TEST(LaunchEnvironment, SlurmCountsThatDisagreeAreAnError) {
  Variables variables = slurm_task_3_of_6();
  variables["SLURM_STEP_NUM_TASKS"] = "5";
  error_naming(variables,
               {"SLURM_STEP_TASKS_PER_NODE='2(x3)'", "6 tasks", "SLURM_STEP_NUM_TASKS=5"});
  variables = slurm_task_3_of_6();
  variables["SLURM_LOCALID"] = "2";
  error_naming(variables, {"SLURM_LOCALID=2", "SLURM_STEP_TASKS_PER_NODE=2"});
  variables = slurm_task_3_of_6();
  variables["SLURM_PROCID"] = "6";
  error_naming(variables, {"SLURM_PROCID=6", "SLURM_STEP_NUM_TASKS=6"});
}

TEST(LaunchEnvironment, SlurmWithPmiAgreesOrRefuses) {
  // srun --mpi=pmi2 sets PMI_RANK and PMI_SIZE to Slurm's values.
  Variables variables = slurm_task_3_of_6();
  variables["PMI_RANK"] = "3";
  variables["PMI_SIZE"] = "6";
  LaunchEnvironment environment = read(variables);
  EXPECT_EQ(environment.launcher, Launcher::kSlurm);
  EXPECT_EQ(environment.rank, 3);
  EXPECT_EQ(environment.master_addr, "node01");
  // Another PMI launcher inside an allocation: Slurm's variables describe the batch script.
  variables["PMI_RANK"] = "2";
  std::string message = error_naming(variables, {"PMI_RANK=2", "SLURM_PROCID=3"});
  EXPECT_TRUE(contains(message, "srun")) << message;
}

TEST(LaunchEnvironment, SlurmRankZeroOffTheFirstNodeAsksForMasterAddr) {
  Variables variables = slurm_task_3_of_6();
  variables["SLURM_PROCID"] = "0";
  variables["SLURM_LOCALID"] = "0";
  variables["SLURMD_NODENAME"] = "node01";
  EXPECT_EQ(read(variables).master_addr, "node01");
  variables["SLURMD_NODENAME"] = "node03";
  LaunchEnvironment environment = read(variables);
  EXPECT_FALSE(environment.master_addr);
  EXPECT_TRUE(contains(environment.master_addr_advice, "SLURMD_NODENAME=node03"));
  EXPECT_TRUE(contains(environment.master_addr_advice, "not on node01"))
      << environment.master_addr_advice;
}

TEST(LaunchEnvironment, SlurmWithoutListOrJobIdAdvises) {
  LaunchEnvironment environment = read({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}});
  EXPECT_FALSE(environment.master_addr);
  EXPECT_FALSE(environment.master_port);
  EXPECT_TRUE(contains(environment.master_addr_advice, "SLURM_JOB_NODELIST"));
  EXPECT_TRUE(contains(environment.master_port_advice, "SLURM_JOB_ID"));
  // Set by hand, they are taken as they are.
  environment = read({{"SLURM_PROCID", "0"},
                      {"SLURM_NTASKS", "2"},
                      {"MASTER_ADDR", "10.0.0.1"},
                      {"MASTER_PORT", "1234"}});
  EXPECT_EQ(environment.master_addr, "10.0.0.1");
  EXPECT_EQ(environment.master_port, 1234);
}

TEST(LaunchEnvironment, MpiLaunchersInsideSlurmAllocationsWin) {
  // mpirun and mpiexec run in batch scripts, whose SLURM_PROCID=0 their ranks inherit.
  Variables slurm_batch = {{"SLURM_PROCID", "0"},         {"SLURM_NTASKS", "3"},
                           {"SLURM_LOCALID", "0"},        {"SLURM_NODEID", "0"},
                           {"SLURM_TASKS_PER_NODE", "3"}, {"SLURM_JOB_NODELIST", "node07"},
                           {"SLURM_JOB_ID", "99"}};
  Variables variables = slurm_batch;
  variables.merge(open_mpi_rank_1_of_3());
  LaunchEnvironment environment = read(variables);
  EXPECT_EQ(environment.launcher, Launcher::kOpenMpi);
  EXPECT_EQ(environment.rank, 1);
  EXPECT_EQ(environment.local_rank, 1);
  EXPECT_EQ(environment.master_addr, "127.0.0.1");
  EXPECT_EQ(environment.master_port, 31645);
  variables = slurm_batch;
  variables.merge(hydra_rank_2_of_3());
  environment = read(variables, /*hydra_proxy=*/1234);
  EXPECT_EQ(environment.launcher, Launcher::kHydra);
  EXPECT_EQ(environment.rank, 2);
  EXPECT_EQ(environment.local_rank, 2);
  EXPECT_EQ(environment.master_port, 25653);
}

TEST(LaunchEnvironment, MalformedValuesNameTheVariable) {
  error_naming({{"RANK", "one"}}, {"RANK='one'"});
  error_naming({{"RANK", "-1"}}, {"RANK='-1'"});
  error_naming({{"WORLD_SIZE", "4x"}}, {"WORLD_SIZE='4x'"});
  error_naming({{"LOCAL_RANK", " 1"}}, {"LOCAL_RANK=' 1'"});
  error_naming({{"MASTER_PORT", "http"}}, {"MASTER_PORT='http'"});
  error_naming({{"MASTER_PORT", "70000"}}, {"MASTER_PORT=70000", "1 to 65535"});
  error_naming({{"MASTER_PORT", "0"}}, {"MASTER_PORT=0"});
  Variables variables = open_mpi_rank_1_of_3();
  variables["OMPI_COMM_WORLD_LOCAL_SIZE"] = "three";
  error_naming(variables, {"OMPI_COMM_WORLD_LOCAL_SIZE='three'"});
  variables = slurm_task_3_of_6();
  variables["SLURM_JOB_ID"] = "12a";
  error_naming(variables, {"SLURM_JOB_ID='12a'"});
  variables = slurm_task_3_of_6();
  variables["SLURM_STEP_NODELIST"] = "node[01-03";
  error_naming(variables, {"SLURM_STEP_NODELIST='node[01-03'", "not closed"});
  variables = slurm_task_3_of_6();
  variables["SLURM_STEP_TASKS_PER_NODE"] = "2(3)";
  error_naming(variables, {"SLURM_STEP_TASKS_PER_NODE='2(3)'"});
}

TEST(LaunchEnvironment, ValuesThatDisagreeNameBothVariables) {
  error_naming({{"RANK", "4"}, {"WORLD_SIZE", "4"}}, {"RANK=4", "WORLD_SIZE=4"});
  error_naming({{"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}},
               {"LOCAL_RANK=2", "LOCAL_WORLD_SIZE=2"});
  error_naming({{"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "3"}},
               {"LOCAL_WORLD_SIZE=3", "WORLD_SIZE=2"});
  Variables variables = open_mpi_rank_1_of_3();
  variables["OMPI_COMM_WORLD_LOCAL_RANK"] = "3";
  error_naming(variables, {"OMPI_COMM_WORLD_LOCAL_RANK=3", "OMPI_COMM_WORLD_LOCAL_SIZE=3"});
  variables = hydra_rank_2_of_3();
  variables["MPI_LOCALNRANKS"] = "0";
  error_naming(variables, {"MPI_LOCALRANKID=2", "MPI_LOCALNRANKS=0"});
}

TEST(LaunchEnvironment, DerivedPortsFollowTheDocumentedFormula) {
  EXPECT_EQ(api::port_of_job(0, 0), 20000);
  EXPECT_EQ(api::port_of_job(1, 0), 20064);
  EXPECT_EQ(api::port_of_job(4242, 1), 21153);
  EXPECT_EQ(api::port_of_job(4242, 65), 21153);  // steps wrap at 64
  EXPECT_EQ(api::port_of_job(UINT64_MAX, UINT64_MAX),
            20000 + ((UINT64_MAX % 12288) * 64 + 63) % 12288);
  // Steps 0..63 of 192 consecutive jobs take every port of the range once.
  std::set<int> ports;
  for (uint64_t job = 1000000; job < 1000000 + 192; ++job) {
    for (uint64_t step = 0; step < 64; ++step) {
      int port = api::port_of_job(job, step);
      EXPECT_GE(port, 20000);
      EXPECT_LE(port, 32287);
      ports.insert(port);
    }
  }
  EXPECT_EQ(ports.size(), 12288u);
  EXPECT_EQ(api::port_of_job_text(""), 24901);  // FNV-1a's offset basis % 12288
  for (const char* text : {"1", "793247745", "prterun-vm-1234@1"}) {
    EXPECT_GE(api::port_of_job_text(text), 20000);
    EXPECT_LE(api::port_of_job_text(text), 32287);
  }
}

// Sets (or, for nullptr, unsets) process environment variables, restoring them on destruction.
class ScopedEnvironment {
 public:
  explicit ScopedEnvironment(std::initializer_list<std::pair<const char*, const char*>> values) {
    for (auto [name, value] : values) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      if (value)
        setenv(name, value, 1);
      else
        unsetenv(name);
    }
  }
  ~ScopedEnvironment() {
    for (auto& [name, old] : saved_) {
      if (old)
        setenv(name, old->c_str(), 1);
      else
        unsetenv(name);
    }
  }

 private:
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

// Every variable that could tell a test process where it is, unset.
std::initializer_list<std::pair<const char*, const char*>> kNoLauncher = {
    {"RANK", nullptr},
    {"WORLD_SIZE", nullptr},
    {"LOCAL_RANK", nullptr},
    {"LOCAL_WORLD_SIZE", nullptr},
    {"MASTER_ADDR", nullptr},
    {"MASTER_PORT", nullptr},
    {"WEFT_STORE_ADDR", nullptr},
    {"OMPI_COMM_WORLD_RANK", nullptr},
    {"PMI_RANK", nullptr},
    {"SLURM_PROCID", nullptr},
    {"TORCHELASTIC_USE_AGENT_STORE", nullptr}};

// srun's variables for rank 1 of a 2-task step on one node.
std::initializer_list<std::pair<const char*, const char*>> kSlurmRank1Of2OnOneNode = {
    {"SLURM_PROCID", "1"},
    {"SLURM_NTASKS", "2"},
    {"SLURM_STEP_NUM_TASKS", nullptr},
    {"SLURM_LOCALID", "1"},
    {"SLURM_NODEID", "0"},
    {"SLURM_STEP_TASKS_PER_NODE", "2"},
    {"SLURM_STEP_NODELIST", "localhost"},
    {"SLURM_JOB_ID", "7"},
    {"SLURM_STEP_ID", "0"},
    {"SLURMD_NODENAME", nullptr}};

TEST(LaunchEnvironment, ReadsTheProcessEnvironment) {
  ScopedEnvironment clean(kNoLauncher);
  ScopedEnvironment slurm(kSlurmRank1Of2OnOneNode);
  LaunchEnvironment environment = api::read_launch_environment();
  EXPECT_EQ(environment.launcher, Launcher::kSlurm);
  EXPECT_EQ(environment.rank, 1);
  EXPECT_EQ(environment.local_world_size, 2);
  EXPECT_EQ(environment.master_addr, "localhost");
  EXPECT_EQ(environment.master_port, api::port_of_job(7, 0));
}

// The public face of the same reading, for programs: weft::launch_info().
TEST(LaunchInfo, SaysWhatTheLauncherSetAndNothingMore) {
  ScopedEnvironment clean(kNoLauncher);
  ScopedEnvironment slurm(kSlurmRank1Of2OnOneNode);
  weft::LaunchInfo info = weft::launch_info();
  EXPECT_EQ(info.launcher, "Slurm");
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.world_size, 2);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_world_size, 2);
  EXPECT_EQ(info.master_addr, "localhost");
  EXPECT_EQ(info.master_port, api::port_of_job(7, 0));
}

TEST(LaunchInfo, NothingSetIsMinusOneAndEmpty) {
  ScopedEnvironment clean(kNoLauncher);
  weft::LaunchInfo info = weft::launch_info();
  EXPECT_EQ(info.rank, -1);
  EXPECT_EQ(info.local_rank, -1);
  EXPECT_EQ(info.master_addr, "");
  EXPECT_EQ(info.master_port, -1);
}

TEST(LaunchEnvironment, InitRaisesTheLaunchersAdvice) {
  ScopedEnvironment clean(kNoLauncher);
  ScopedEnvironment open_mpi({{"OMPI_COMM_WORLD_RANK", "1"},
                              {"OMPI_COMM_WORLD_SIZE", "4"},
                              {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                              {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                              {"OMPI_MCA_ess_base_jobid", "5"}});
  Error error = error_of([] { init_process_group(); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(error.what(), "mpirun -x MASTER_ADDR=<first host>")) << error.what();
}

TEST(LaunchEnvironment, InitSaysHowToMoveADerivedPortThatIsTaken) {
  ScopedEnvironment clean(kNoLauncher);
  const int port = api::port_of_job(1, 0);
  util::Fd holder;
  try {
    holder = util::listen_on(util::resolve("127.0.0.1", port), false);
  } catch (const Error&) {
    // Someone else holds it already: the test holds all the same.
  }
  ScopedEnvironment slurm({{"SLURM_PROCID", "0"},
                           {"SLURM_NTASKS", "1"},
                           {"SLURM_STEP_NUM_TASKS", nullptr},
                           {"SLURM_LOCALID", "0"},
                           {"SLURM_STEP_TASKS_PER_NODE", "1"},
                           {"SLURM_STEP_NODELIST", "127.0.0.1"},
                           {"SLURM_JOB_ID", "1"},
                           {"SLURM_STEP_ID", "0"},
                           {"SLURMD_NODENAME", nullptr}});
  InitOptions options;
  options.timeout = std::chrono::seconds(5);
  Error error = error_of([&] { init_process_group(options); });
  EXPECT_EQ(error.code(), ErrorCode::kSystem);
  EXPECT_TRUE(contains(error.what(), "MASTER_PORT=" + std::to_string(port) + " was derived"))
      << error.what();
  EXPECT_TRUE(contains(error.what(), "set MASTER_PORT to another free port")) << error.what();
}

}  // namespace
}  // namespace weft
