// weftrun_test — runs the real weftrun binary on small programs: shell one-liners, and this
// test binary itself in "probe" mode (a rank that uses the job's store through
// WEFT_STORE_ADDR). Every launch has a deadline: a weftrun still running when it passes is
// killed and the test fails, so a bug never hangs the suite.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/free_port.h"
#include "support/temp_paths.h"
#include "util/socket.h"
#include "weft/store.h"
#include "weft/tcp_store.h"
#include "weft/weft.h"
#include "weftrun/weftrun_process.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using weft::testing::eventually;
using weft::testing::free_port;
using weft::testing::read_file;
using weft::testing::TempDir;
using weft::testing::Weftrun;

std::string self_exe() { return fs::read_symlink("/proc/self/exe").string(); }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

int count_of(const std::string& text, const std::string& needle) {
  int count = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++count;
  return count;
}

// A zombie counts as gone: this machine's init may take a while to reap orphans.
bool alive(pid_t pid) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  std::size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  char state = stat[paren + 2];
  return state != 'Z' && state != 'X';
}

// The pids the ranks wrote into dir/pid.* ; expects `count` of them.
std::vector<pid_t> rank_pids(const fs::path& dir) {
  std::vector<pid_t> pids;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("pid.", 0) != 0) continue;
    std::string text = read_file(entry.path());
    if (!text.empty()) pids.push_back(static_cast<pid_t>(std::stol(text)));
  }
  return pids;
}

void expect_all_gone(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) {
    EXPECT_TRUE(eventually([&] { return !alive(pid); }, 2000ms))
        << "process " << pid << " outlived weftrun";
  }
}

std::string sh_quote_dir(const fs::path& dir) { return "'" + dir.string() + "'"; }

// weftrun's watchdog (tools/weftrun/orphan_guard.h): the child of weftrun's main thread named
// weft-guard, or -1.
pid_t orphan_guard_of(pid_t weftrun) {
  std::string id = std::to_string(weftrun);
  std::istringstream children(read_file("/proc/" + id + "/task/" + id + "/children"));
  for (pid_t child; children >> child;) {
    if (read_file("/proc/" + std::to_string(child) + "/comm") == "weft-guard\n") return child;
  }
  return -1;
}

// --- probe mode: a rank that meets the others in the job's store --------------------------

int run_store_probe() {
  const char* addr = std::getenv("WEFT_STORE_ADDR");
  const char* rank_text = std::getenv("RANK");
  const char* size_text = std::getenv("WORLD_SIZE");
  const char* token = std::getenv("WEFT_JOB_TOKEN");
  if (!addr || !rank_text || !size_text || !token) {
    std::fprintf(stderr, "probe: bootstrap variables missing\n");
    return 10;
  }
  auto [host, port] = weft::util::split_host_port(addr, "WEFT_STORE_ADDR");
  int rank = std::atoi(rank_text);
  int size = std::atoi(size_text);
  weft::TcpStore store(host, port, std::chrono::milliseconds(10'000));
  store.set_timeout(std::chrono::milliseconds(10'000));
  // The store took this connection, so the token is the job's: the store proved it knows it.
  // It must not rest in the store (where weftrun once shared it between nodes).
  for (const char* key : {"weftrun/job_token", "weft/job_token"}) {
    if (store.check({key})) {
      std::fprintf(stderr, "probe: the job token rests in the store under %s\n", key);
      return 12;
    }
  }
  store.set("probe/rank/" + std::to_string(rank), weft::to_bytes("here"));
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back("probe/rank/" + std::to_string(r));
  store.multi_get(keys);  // a barrier over the whole job
  std::printf("probe rank=%d size=%d token=%s\n", rank, size, token);
  return 0;
}

// --- probe modes with a real weft group: timelines and flight recorders -------------------

// Five all_reduces of 8 bytes, for WEFT_TRACE.
int run_trace_probe() {
  auto group = weft::init_process_group();
  std::vector<float> data(2, 1.0f);
  for (int i = 0; i < 5; ++i) group->all_reduce(weft::BufferView(data));
  return 0;
}

// Three all_reduces of 8 bytes, then rank 1 sleeps while rank 0 calls a fourth. "fail": with a
// 300 ms timeout, after which rank 0 exits with code 3; "hang": without, until weftrun is
// interrupted.
int run_flight_probe(const std::string& mode) {
  auto group = weft::init_process_group();
  std::vector<float> data(2, 1.0f);
  for (int i = 0; i < 3; ++i) group->all_reduce(weft::BufferView(data));
  std::printf("ready\n");
  std::fflush(stdout);
  if (group->rank() == 1) {
    std::this_thread::sleep_for(30s);
    return 0;
  }
  weft::CollectiveOptions options;
  if (mode == "fail") options.timeout = 300ms;
  try {
    group->all_reduce(weft::BufferView(data), weft::ReduceOp::kSum, options);
  } catch (const weft::Error& error) {
    std::fprintf(stderr, "probe: %s\n", error.what());
    std::fflush(nullptr);
    std::_Exit(3);  // without leaving the group: rank 1 never says goodbye
  }
  return 0;
}

// --- tests -------------------------------------------------------------------------------

TEST(Weftrun, SetsTheBootstrapEnvironmentForEveryRank) {
  TempDir dir;
  Weftrun run({"-n", "3", "sh", "-c",
               "echo env $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $GROUP_RANK $NODE_RANK "
               "$MASTER_ADDR $MASTER_PORT $WEFT_JOB_TOKEN $WEFT_STORE_ADDR"},
              dir.path());
  ASSERT_EQ(run.wait(10s), 0) << run.err();
  std::regex pattern(
      R"(\[rank (\d)\] env (\d) 3 (\d) 3 0 0 127\.0\.0\.1 (\d+) ([0-9a-f]{32}) 127\.0\.0\.1:(\d+))");
  std::set<int> ranks;
  std::set<std::string> tokens;
  for (const std::string& line : lines_of(run.out())) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, pattern)) << line;
    EXPECT_EQ(m[1], m[2]);
    EXPECT_EQ(m[2], m[3]);  // one node: RANK == LOCAL_RANK
    EXPECT_NE(m[4], m[6]) << "MASTER_PORT must differ from the weft store's port";
    ranks.insert(std::stoi(m[2]));
    tokens.insert(m[5]);
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(tokens.size(), 1u) << "every rank gets the same job token";
  EXPECT_EQ(run.err(), "");
}

TEST(Weftrun, RanksShareTheStoreItHosts) {
  TempDir dir;
  Weftrun run({"--nproc-per-node", "3", self_exe(), "--weftrun-store-probe"}, dir.path());
  ASSERT_EQ(run.wait(20s), 0) << run.err();
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(count_of(run.out(), "[rank " + std::to_string(r) +
                                      "] probe rank=" + std::to_string(r) + " size=3"),
              1)
        << run.out();
  }
}

TEST(Weftrun, JobTokenFromTheEnvironmentOrTheFlag) {
  TempDir dir;
  Weftrun from_env({"-n", "2", "sh", "-c", "echo token=$WEFT_JOB_TOKEN"}, dir.path(), "env",
                   {{"WEFT_JOB_TOKEN", "sesame"}}, /*clear_token=*/false);
  ASSERT_EQ(from_env.wait(10s), 0) << from_env.err();
  EXPECT_EQ(count_of(from_env.out(), "token=sesame\n"), 2) << from_env.out();

  Weftrun from_flag(
      {"-n", "2", "--job-token", "opensesame", "sh", "-c", "echo token=$WEFT_JOB_TOKEN"},
      dir.path(), "flag", {{"WEFT_JOB_TOKEN", "sesame"}}, /*clear_token=*/false);
  ASSERT_EQ(from_flag.wait(10s), 0) << from_flag.err();
  EXPECT_EQ(count_of(from_flag.out(), "token=opensesame\n"), 2) << from_flag.out();
}

// The listening sockets on `port` in /proc/net/tcp and tcp6 text: each one's local address, as
// the kernel writes it (0100007F is 127.0.0.1; all zeros is every address).
std::vector<std::string> listeners_on_port(const std::string& proc_net_tcp, int port) {
  char port_hex[8];
  std::snprintf(port_hex, sizeof port_hex, "%04X", port);
  std::vector<std::string> listeners;
  std::regex row(R"(^\s*\[rank 0\] \s*\d+: ([0-9A-F]+):([0-9A-F]{4}) [0-9A-F]+:[0-9A-F]{4} 0A )");
  for (const std::string& line : lines_of(proc_net_tcp)) {
    std::smatch m;
    if (std::regex_search(line, m, row) && m[2] == port_hex) listeners.push_back(m[1]);
  }
  return listeners;
}

TEST(Weftrun, AOneNodeJobOnAGivenMasterPortServesItsStoreOnLoopbackOnly) {
  TempDir dir;
  const int port = free_port();
  Weftrun run({"-n", "2", "--master-port", std::to_string(port), "sh", "-c",
               "cat /proc/net/tcp /proc/net/tcp6"},
              dir.path());
  ASSERT_EQ(run.wait(10s), 0) << run.err();
  std::vector<std::string> listeners = listeners_on_port(run.out(), port);
  ASSERT_FALSE(listeners.empty()) << "no listener on the store's port " << port << ":\n"
                                  << run.out();
  for (const std::string& address : listeners) {
    EXPECT_TRUE(address == "0100007F" || address == "00000000000000000000000001000000")
        << "the store listens on " << address << ", not loopback only";
  }
}

TEST(Weftrun, PrefixesEveryLineWithTheRank) {
  TempDir dir;
  Weftrun run({"-n", "2", "sh", "-c", "echo out$RANK; echo err$RANK >&2; printf partial$RANK"},
              dir.path());
  ASSERT_EQ(run.wait(10s), 0) << run.err();
  std::string out = run.out();
  std::string err = run.err();
  for (int r = 0; r < 2; ++r) {
    std::string R = std::to_string(r);
    EXPECT_EQ(count_of(out, "[rank " + R + "] out" + R + "\n"), 1) << out;
    EXPECT_EQ(count_of(out, "[rank " + R + "] partial" + R + "\n"), 1)
        << "a last line without newline";
    EXPECT_EQ(count_of(err, "[rank " + R + "] err" + R + "\n"), 1) << err;
    EXPECT_EQ(count_of(out, "err" + R), 0) << "stderr lines go to stderr";
  }
}

TEST(Weftrun, NoPrefixLeavesOutputAlone) {
  TempDir dir;
  Weftrun run({"-n", "2", "--no-prefix", "sh", "-c", "echo out$RANK; echo err$RANK >&2"},
              dir.path());
  ASSERT_EQ(run.wait(10s), 0) << run.err();
  EXPECT_EQ(count_of(run.out(), "[rank"), 0) << run.out();
  EXPECT_EQ(count_of(run.out(), "out0\n"), 1);
  EXPECT_EQ(count_of(run.out(), "out1\n"), 1);
  EXPECT_EQ(count_of(run.err(), "err1\n"), 1);
}

TEST(Weftrun, LinesOfDifferentRanksNeverInterleave) {
  TempDir dir;
  // Each rank writes 3000 lines of 300 characters, in pieces smaller than a line.
  Weftrun run({"-n", "3", "sh", "-c",
               "awk -v r=$RANK 'BEGIN { s = sprintf(\"%300s\", \"\"); gsub(/ /, r, s);"
               " for (i = 0; i < 3000; i++) { printf \"%s\", substr(s, 1, 100); fflush();"
               " printf \"%s\\n\", substr(s, 101) } }'"},
              dir.path());
  ASSERT_EQ(run.wait(30s), 0) << run.err();
  std::vector<std::string> lines = lines_of(run.out());
  EXPECT_EQ(lines.size(), 9000u);
  for (const std::string& line : lines) {
    ASSERT_EQ(line.size(), 9u + 300u) << line.substr(0, 40);
    char r = line[6];
    ASSERT_EQ(line.substr(0, 9), std::string("[rank ") + r + "] ");
    ASSERT_EQ(line.find_first_not_of(r, 9), std::string::npos) << "a line mixes ranks";
  }
}

TEST(Weftrun, OneFailedRankStopsTheOthers) {
  TempDir dir;
  std::string script = "echo $$ > " + sh_quote_dir(dir.path()) +
                       "/pid.$RANK; if [ $RANK = 2 ]; then sleep 0.3; exit 3; fi; exec sleep 30";
  Weftrun run({"-n", "4", "sh", "-c", script}, dir.path());
  EXPECT_EQ(run.wait(8s), 3) << run.err();
  EXPECT_LT(run.seconds(), 4.0);
  std::string err = run.err();
  EXPECT_TRUE(std::regex_search(
      err,
      std::regex(R"(^weftrun: rank 2 \(pid \d+\) exited with code 3; stopping the other 3 ranks$)",
                 std::regex::multiline)))
      << err;
  EXPECT_EQ(count_of(err, "weftrun: rank"), 1) << "only the first failure is reported";
  std::vector<pid_t> pids = rank_pids(dir.path());
  EXPECT_EQ(pids.size(), 4u);
  expect_all_gone(pids);
}

TEST(Weftrun, StopsWhatARankStartedToo) {
  TempDir dir;
  // Rank 0's shell waits on a background sleep: both are in the rank's process group.
  std::string script = "if [ $RANK = 1 ]; then sleep 0.3; exit 1; fi; sleep 30 & echo $! > " +
                       sh_quote_dir(dir.path()) + "/pid.grandchild; wait";
  Weftrun run({"-n", "2", "sh", "-c", script}, dir.path());
  EXPECT_EQ(run.wait(8s), 1) << run.err();
  std::vector<pid_t> pids = rank_pids(dir.path());
  ASSERT_EQ(pids.size(), 1u);
  expect_all_gone(pids);
}

TEST(Weftrun, ReportsARankKilledByASignal) {
  TempDir dir;
  Weftrun run(
      {"-n", "2", "sh", "-c", "if [ $RANK = 1 ]; then sleep 0.2; kill -9 $$; fi; exec sleep 30"},
      dir.path());
  EXPECT_EQ(run.wait(8s), 128 + 9) << run.err();
  EXPECT_TRUE(std::regex_search(
      run.err(), std::regex(R"(weftrun: rank 1 \(pid \d+\) was killed by signal 9 \(SIGKILL\))")))
      << run.err();
}

TEST(Weftrun, KillsARankThatIgnoresSigterm) {
  TempDir dir;
  std::string script =
      "echo $$ > " + sh_quote_dir(dir.path()) +
      "/pid.$RANK; if [ $RANK = 1 ]; then sleep 0.3; exit 1; fi; trap '' TERM; exec sleep 30";
  Weftrun run({"-n", "2", "sh", "-c", script}, dir.path());
  EXPECT_EQ(run.wait(10s), 1) << run.err();
  EXPECT_GT(run.seconds(), 2.5) << "the grace period comes before SIGKILL";
  EXPECT_NE(run.err().find("still running after the grace period; killing"), std::string::npos)
      << run.err();
  expect_all_gone(rank_pids(dir.path()));
}

TEST(Weftrun, ForwardsSigtermToEveryRank) {
  TempDir dir;
  Weftrun run({"-n", "2", "sh", "-c",
               "trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done"},
              dir.path());
  ASSERT_TRUE(eventually([&] { return count_of(run.out(), "ready\n") == 2; }, 10s)) << run.err();
  ::kill(run.pid(), SIGTERM);
  EXPECT_EQ(run.wait(8s), 128 + SIGTERM) << run.err();
  EXPECT_EQ(count_of(run.out(), "[rank 0] got-term\n"), 1) << run.out();
  EXPECT_EQ(count_of(run.out(), "[rank 1] got-term\n"), 1) << run.out();
  EXPECT_NE(run.err().find("weftrun: received SIGTERM; forwarding it to the 2 ranks"),
            std::string::npos)
      << run.err();
}

TEST(Weftrun, SighupStopsTheRanksAndWhatTheyStarted) {
  TempDir dir;
  // Each rank's shell waits on a background sleep: both are in the rank's process group.
  std::string script =
      "sleep 30 & echo $! > " + sh_quote_dir(dir.path()) + "/pid.$RANK; echo ready; wait";
  Weftrun run({"-n", "2", "sh", "-c", script}, dir.path());
  ASSERT_TRUE(eventually([&] { return count_of(run.out(), "ready\n") == 2; }, 10s)) << run.err();
  ::kill(run.pid(), SIGHUP);
  EXPECT_EQ(run.wait(8s), 128 + SIGHUP) << run.err();
  EXPECT_NE(run.err().find("weftrun: received SIGHUP; forwarding it to the 2 ranks"),
            std::string::npos)
      << run.err();
  std::vector<pid_t> pids = rank_pids(dir.path());
  EXPECT_EQ(pids.size(), 2u);
  expect_all_gone(pids);
}

TEST(Weftrun, SigkillStopsTheRanksAndWhatTheyStarted) {
  TempDir dir;
  // weftrun can do nothing about its own SIGKILL: its orphan guard must stop every rank's
  // process group, the background sleeps included.
  std::string script = "sleep 300 & echo $! > " + sh_quote_dir(dir.path()) +
                       "/pid.grandchild.$RANK; echo $$ > " + sh_quote_dir(dir.path()) +
                       "/pid.rank.$RANK; echo ready; wait";
  Weftrun run({"-n", "2", "sh", "-c", script}, dir.path());
  ASSERT_TRUE(eventually([&] { return count_of(run.out(), "ready\n") == 2; }, 10s)) << run.err();
  pid_t guard = orphan_guard_of(run.pid());
  EXPECT_GT(guard, 0) << "weftrun runs no orphan guard";
  std::vector<pid_t> pids = rank_pids(dir.path());
  ASSERT_EQ(pids.size(), 4u);
  ::kill(run.pid(), SIGKILL);
  EXPECT_EQ(run.wait(5s), 128 + SIGKILL) << run.err();
  expect_all_gone(pids);
  // Once the groups are empty the guard leaves; the grace period (5 s) bounds it in any case.
  if (guard > 0) {
    EXPECT_TRUE(eventually([&] { return !alive(guard); }, 8s)) << "the orphan guard lingers";
  }
  if (HasFailure()) {
    for (pid_t pid : pids) {
      if (alive(pid)) ::kill(pid, SIGKILL);  // leave no sleep 300 behind a failed test
    }
  }
}

TEST(Weftrun, ReapsItsOrphanGuardWhenTheJobEnds) {
  TempDir dir;
  Weftrun run({"-n", "2", "sh", "-c", "echo ready; sleep 0.5"}, dir.path());
  ASSERT_TRUE(eventually([&] { return count_of(run.out(), "ready\n") == 2; }, 10s)) << run.err();
  pid_t guard = orphan_guard_of(run.pid());
  ASSERT_GT(guard, 0) << "weftrun runs no orphan guard";
  EXPECT_EQ(run.wait(8s), 0) << run.err();
  EXPECT_FALSE(fs::exists("/proc/" + std::to_string(guard)))
      << "weftrun exited without reaping its orphan guard";
}

TEST(Weftrun, RunsProgramsFromPathAndNamesOnesItCannotRun) {
  TempDir dir;
  Weftrun ok({"-n", "2", "true"}, dir.path(), "ok");
  EXPECT_EQ(ok.wait(10s), 0) << ok.err();

  Weftrun missing({"-n", "2", "/nonexistent/program"}, dir.path(), "missing");
  EXPECT_EQ(missing.wait(10s), 127);
  EXPECT_NE(
      missing.err().find("weftrun: cannot run '/nonexistent/program': No such file or directory"),
      std::string::npos)
      << missing.err();
}

// Every node of a job that spans nodes is given the job's token.
const std::string kTwoNodeToken = "0123456789abcdef0123456789abcdef";

TEST(Weftrun, TwoNodesMakeOneJob) {
  TempDir dir;
  int port = free_port();
  auto node = [&](int rank) {
    return std::vector<std::string>{
        "--nnodes",
        "2",
        "--node-rank",
        std::to_string(rank),
        "--job-token",
        kTwoNodeToken,
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        std::to_string(port),
        "-n",
        "2",
        "sh",
        "-c",
        "echo env $RANK $WORLD_SIZE $LOCAL_RANK $GROUP_RANK $MASTER_PORT "
        "$WEFT_STORE_ADDR $WEFT_JOB_TOKEN; exec \"$0\" --weftrun-store-probe",
        self_exe()};
  };
  // Node 1 first: it must wait for node 0's store to come up.
  Weftrun node1(node(1), dir.path(), "node1");
  std::this_thread::sleep_for(200ms);
  Weftrun node0(node(0), dir.path(), "node0");
  ASSERT_EQ(node0.wait(20s), 0) << node0.err();
  ASSERT_EQ(node1.wait(20s), 0) << node1.err();

  std::regex pattern(
      R"(\[rank (\d)\] env (\d) 4 (\d) (\d) (\d+) 127\.0\.0\.1:(\d+) ([0-9a-f]{32}))");
  std::set<int> ranks;
  std::set<std::string> tokens;
  for (int n = 0; n < 2; ++n) {
    for (const std::string& line : lines_of(n == 0 ? node0.out() : node1.out())) {
      std::smatch m;
      if (!std::regex_match(line, m, pattern)) continue;
      int rank = std::stoi(m[2]);
      EXPECT_EQ(rank, n * 2 + std::stoi(m[3]));
      EXPECT_EQ(std::stoi(m[4]), n);
      EXPECT_EQ(std::stoi(m[5]), port + 1);
      EXPECT_EQ(std::stoi(m[6]), port);
      ranks.insert(rank);
      tokens.insert(m[7]);
    }
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2, 3}));
  EXPECT_EQ(tokens, (std::set<std::string>{kTwoNodeToken})) << "both nodes use the given token";
  // The probes met in one store: each saw all four ranks.
  EXPECT_EQ(count_of(node0.out() + node1.out(), "size=4 token="), 4) << node0.out() << node1.out();
}

TEST(Weftrun, AFailureOnOneNodeStopsTheOther) {
  TempDir dir;
  int port = free_port();
  auto node = [&](int rank, const std::string& script) {
    return std::vector<std::string>{"--nnodes",
                                    "2",
                                    "--node-rank",
                                    std::to_string(rank),
                                    "--job-token",
                                    kTwoNodeToken,
                                    "--master-addr",
                                    "127.0.0.1",
                                    "--master-port",
                                    std::to_string(port),
                                    "-n",
                                    "2",
                                    "sh",
                                    "-c",
                                    script};
  };
  std::string pid_file = "echo $$ > " + sh_quote_dir(dir.path()) + "/pid.$RANK; ";
  Weftrun node0(node(0, pid_file + "exec sleep 30"), dir.path(), "node0");
  Weftrun node1(node(1, pid_file + "if [ $RANK = 3 ]; then sleep 0.5; exit 5; fi; exec sleep 30"),
                dir.path(), "node1");
  EXPECT_EQ(node1.wait(15s), 5) << node1.err();
  EXPECT_EQ(node0.wait(15s), 5) << node0.err();
  EXPECT_LT(node0.seconds(), 8.0);
  EXPECT_TRUE(std::regex_search(
      node1.err(), std::regex(R"(weftrun: rank 3 \(node 1, pid \d+\) exited with code 5)")))
      << node1.err();
  EXPECT_TRUE(std::regex_search(
      node0.err(),
      std::regex(
          R"(weftrun: stopping the 2 ranks of node 0: rank 3 \(node 1, pid \d+\) exited with code 5)")))
      << node0.err();
  expect_all_gone(rank_pids(dir.path()));
}

TEST(Weftrun, ANodeWithoutTheJobTokenIsToldToPassIt) {
  TempDir dir;
  int port = free_port();
  Weftrun node1({"--nnodes", "2", "--node-rank", "1", "--master-addr", "127.0.0.1", "--master-port",
                 std::to_string(port), "-n", "1", "true"},
                dir.path(), "node1");
  EXPECT_EQ(node1.wait(10s), 1) << node1.err();
  EXPECT_NE(node1.err().find("needs its job token on every node: pass the same --job-token"),
            std::string::npos)
      << node1.err();
}

TEST(Weftrun, ANodeWithAnotherTokenCannotJoin) {
  TempDir dir;
  int port = free_port();
  auto node = [&](int rank, const std::string& token) {
    return std::vector<std::string>{"--nnodes",
                                    "2",
                                    "--node-rank",
                                    std::to_string(rank),
                                    "--job-token",
                                    token,
                                    "--master-addr",
                                    "127.0.0.1",
                                    "--master-port",
                                    std::to_string(port),
                                    "--join-timeout",
                                    "3",
                                    "-n",
                                    "1",
                                    "true"};
  };
  Weftrun node0(node(0, kTwoNodeToken), dir.path(), "node0");
  Weftrun node1(node(1, "not-the-job-token"), dir.path(), "node1");
  EXPECT_EQ(node1.wait(15s), 1) << node1.err();
  EXPECT_NE(node1.err().find("job token mismatch"), std::string::npos) << node1.err();
  EXPECT_NE(node0.wait(15s), 0) << node0.err();
}

TEST(Weftrun, RejectsBadFlagsWithOneLine) {
  TempDir dir;
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Case> cases = {
      {{"-n", "0", "true"}, "weftrun: --nproc-per-node: Value 0 not in range 1 to 4096"},
      {{"--nnodes", "two", "true"}, "weftrun: --nnodes: expects a decimal integer, got 'two'"},
      {{"-n", "010", "true"}, "weftrun: --nproc-per-node: expects a decimal integer, got '010'"},
      {{"--master-port", "0x1F90", "true"},
       "weftrun: --master-port: expects a decimal integer, got '0x1F90'"},
      {{"--master_port=65535", "true"}, "weftrun: --master-port: Value 65535 not in range"},
      {{"--frobnicate", "true"}, "weftrun: unknown option '--frobnicate'"},
      {{"-n", "2", "-q", "--", "true"}, "weftrun: unknown option '-q'"},
      {{"-n", "2", "-x", "--", "true"}, "weftrun: -x: expects NAME or NAME=VALUE, got '--'"},
      {{"-n", "2"}, "weftrun: no program given"},
      {{"-n", "2", "--"}, "weftrun: no program given"},
      {{"--nnodes", "2", "--node-rank", "2", "true"},
       "weftrun: --node-rank 2 is not below --nnodes 2"},
      {{"--master-port"}, "weftrun: --master-port: 1 required PORT missing"},
      {{"--bind", "tight", "true"}, "weftrun: --bind must be spread or none, not 'tight'"},
      {{"--job-token", "", "true"}, "weftrun: --job-token: expects a non-empty token"},
  };
  int i = 0;
  for (const Case& c : cases) {
    Weftrun run(c.args, dir.path(), "bad" + std::to_string(i++));
    EXPECT_EQ(run.wait(5s), 2);
    std::string err = run.err();
    EXPECT_EQ(err.rfind(c.message, 0), 0u) << err;
    EXPECT_EQ(count_of(err, "\n"), 1) << err;
    EXPECT_EQ(run.out(), "");
  }
}

// Each rank prints its arguments as "a|b|c|", so that what reached it shows exactly, in one
// write: with --no-prefix the ranks share weftrun's stdout, and two writes of one rank's line
// may have the other rank's line between them.
const std::vector<std::string> kPrintArgs = {"sh", "-c",
                                             "printf '%s\\n' \"$(printf '%s|' \"$@\")\"", "sh"};

TEST(Weftrun, PassesEverythingAfterTheProgramToItUntouched) {
  TempDir dir;
  std::vector<std::string> args = {"-n", "2", "--no-prefix"};
  args.insert(args.end(), kPrintArgs.begin(), kPrintArgs.end());
  // weftrun's own flags, "--" and --help after the program are the program's.
  args.insert(args.end(), {"-n", "3", "--nnodes=2", "--help", "--", "-x", "plain"});
  Weftrun run(args, dir.path());
  ASSERT_EQ(run.wait(10s), 0) << run.err();
  EXPECT_EQ(run.out(),
            "-n|3|--nnodes=2|--help|--|-x|plain|\n-n|3|--nnodes=2|--help|--|-x|plain|\n");
}

TEST(Weftrun, TakesAProgramThatLooksLikeAFlagAfterDoubleDash) {
  TempDir dir;
  fs::path program = dir.path() / "-dash-program";
  std::ofstream(program) << "#!/bin/sh\necho \"ran $RANK $*\"\n";
  fs::permissions(program, fs::perms::owner_all);
  Weftrun run({"--no-prefix", "--", program.string(), "--no-prefix"}, dir.path());
  ASSERT_EQ(run.wait(10s), 0) << run.err();
  EXPECT_EQ(run.out(), "ran 0 --no-prefix\n");
}

TEST(Weftrun, ReadsTorchrunSpellingsAttachedValuesAndTheLastOfARepeatedFlag) {
  TempDir dir;
  struct Case {
    std::vector<std::string> flags;
    std::string world_size;
  };
  std::vector<Case> cases = {
      {{"--nproc_per_node=3", "--no_prefix"}, "3"},
      {{"--nproc-per-node", "2", "--no-prefix"}, "2"},
      {{"-n3", "--no-prefix"}, "3"},
      {{"-n", "3", "--no-prefix", "-n", "1"}, "1"},
  };
  int i = 0;
  for (const Case& c : cases) {
    std::vector<std::string> args = c.flags;
    args.insert(args.end(), {"sh", "-c", "echo $WORLD_SIZE"});
    Weftrun run(args, dir.path(), "spelling" + std::to_string(i++));
    ASSERT_EQ(run.wait(10s), 0) << run.err();
    std::string expected;
    for (int r = 0; r < std::stoi(c.world_size); ++r) expected += c.world_size + "\n";
    EXPECT_EQ(run.out(), expected) << c.flags[0];
  }
}

// "RANK <cpus>" lines of `weftrun ARGS sh -c ...` -> the CPU list of each rank.
std::map<int, std::string> cpus_by_rank(const std::vector<std::string>& weftrun_args) {
  TempDir dir;
  std::vector<std::string> args = weftrun_args;
  args.insert(args.end(), {"--no-prefix", "sh", "-c",
                           "echo $RANK $(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "
                           "/proc/self/status)"});
  Weftrun run(args, dir.path());
  EXPECT_EQ(run.wait(10s), 0) << run.err();
  std::map<int, std::string> cpus;
  std::istringstream lines(run.out());
  int rank;
  std::string list;
  while (lines >> rank >> list) cpus[rank] = list;
  return cpus;
}

TEST(Weftrun, SpreadsRanksOverDisjointCpuSlicesUnlessTheyOutnumberThem) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  const int cpus = CPU_COUNT(&mine);
  if (cpus < 2) GTEST_SKIP() << "needs two CPUs";
  auto spread = cpus_by_rank({"-n", "2"});
  ASSERT_EQ(spread.size(), 2u);
  EXPECT_NE(spread[0], spread[1]) << "both ranks may run on " << spread[0];
  auto unbound = cpus_by_rank({"-n", "2", "--bind", "none"});
  EXPECT_EQ(unbound[0], unbound[1]);
  auto outnumbered = cpus_by_rank({"-n", std::to_string(cpus + 1)});
  ASSERT_EQ(outnumbered.size(), static_cast<std::size_t>(cpus + 1));
  for (auto& [rank, list] : outnumbered) EXPECT_EQ(list, unbound[0]) << "rank " << rank;
}

TEST(Weftrun, HelpPrintsUsage) {
  TempDir dir;
  Weftrun run({"--help"}, dir.path());
  EXPECT_EQ(run.wait(5s), 0);
  EXPECT_EQ(run.out().rfind("usage: weftrun", 0), 0u) << run.out();
  EXPECT_NE(run.out().find("--nproc-per-node"), std::string::npos);
  // torchrun's underscore spellings work but are not listed twice.
  EXPECT_EQ(run.out().find("--nproc_per_node"), std::string::npos) << run.out();
  // The default token is weftrun's own on one node; nothing shares it through the store.
  EXPECT_EQ(run.out().find("shared through the store"), std::string::npos) << run.out();
  EXPECT_EQ(run.err(), "");
}

}  // namespace

TEST(Weftrun, MergesTheRanksTimelinesIntoOneTrace) {
  TempDir dir;
  fs::path traces = dir.path() / "traces";
  Weftrun run({"-n", "2", self_exe(), "--weftrun-trace-probe"}, dir.path(), "weftrun",
              {{"WEFT_TRACE", traces.string()}});
  ASSERT_EQ(run.wait(30s), 0) << run.err();
  EXPECT_NE(run.err().find("weftrun: merged the timelines of 2 ranks (10 ops) into " +
                           (traces / "trace.json").string()),
            std::string::npos)
      << run.err();
  nlohmann::json trace = nlohmann::json::parse(read_file(traces / "trace.json"));
  std::map<int, int> ops_of_rank;
  std::set<std::string> process_names;
  double first = 1e300;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "process_name") {
      process_names.insert(event["args"]["name"].get<std::string>());
    }
    if (event["ph"] != "X") continue;
    EXPECT_EQ(event["args"]["op"], "all_reduce");
    EXPECT_EQ(event["args"]["bytes"], 8);
    EXPECT_EQ(event["args"]["seq"], ops_of_rank[event["pid"].get<int>()]++);
    first = std::min(first, event["ts"].get<double>());
  }
  EXPECT_EQ(ops_of_rank, (std::map<int, int>{{0, 5}, {1, 5}}));
  EXPECT_EQ(process_names, (std::set<std::string>{"rank 0", "rank 1"}));
  EXPECT_EQ(first, 0.0) << "the merged trace starts at 0";
}

// The table's cell of a rank's op, e.g. "3 all_reduce 8B timeout".
bool table_has(const std::string& err, const std::string& cell) {
  return err.find(cell) != std::string::npos;
}

TEST(Weftrun, PrintsTheRanksLastOpsSideBySideWhenARankFails) {
  TempDir dir;
  Weftrun run({"-n", "2", self_exe(), "--weftrun-flight-probe", "fail"}, dir.path());
  ASSERT_EQ(run.wait(30s), 3) << run.err();
  std::string err = run.err();
  EXPECT_NE(err.find("weftrun: last ops of each rank (flight recorder: seq op bytes state, newest "
                     "last):"),
            std::string::npos)
      << err;
  EXPECT_TRUE(std::regex_search(err, std::regex(R"(rank 0 +\| rank 1)"))) << err;
  // Rank 0 timed out in seq 3; rank 1 (stopped by SIGTERM) had finished seq 2: on one row.
  EXPECT_TRUE(std::regex_search(err, std::regex(R"(3 all_reduce 8B timeout +\| 2 all_reduce 8B )")))
      << err;
  EXPECT_TRUE(table_has(err, "0 all_reduce 8B done")) << err;
}

TEST(Weftrun, PrintsTheRanksLastOpsWhenInterrupted) {
  TempDir dir;
  Weftrun run({"-n", "2", self_exe(), "--weftrun-flight-probe", "hang"}, dir.path());
  ASSERT_TRUE(eventually([&] { return count_of(run.out(), "ready\n") == 2; }, 20s)) << run.err();
  std::this_thread::sleep_for(100ms);  // rank 0 enters its fourth all_reduce
  ::kill(run.pid(), SIGINT);
  EXPECT_EQ(run.wait(10s), 128 + SIGINT) << run.err();
  std::string err = run.err();
  // Each rank wrote its ring from its signal handler: rank 0 is still in seq 3.
  EXPECT_TRUE(
      std::regex_search(err, std::regex(R"(3 all_reduce 8B running +\| 2 all_reduce 8B done)")))
      << err;
}

// --- mpirun and torchrun habits: -np, --timeout, --output-dir, --timestamp ----------------

TEST(Weftrun, NpIsTheJobsTotalRanks) {
  TempDir dir;
  struct Case {
    std::vector<std::string> flags;
    std::string world_size;
  };
  std::vector<Case> cases = {
      {{"-np", "4"}, "4"},
      {{"-np=3"}, "3"},
      {{"-np2"}, "2"},
      {{"-np", "2", "--nproc_per_node", "2"}, "2"},  // both, agreeing
  };
  int i = 0;
  for (const Case& c : cases) {
    std::vector<std::string> args = c.flags;
    // The program's own -np is its own.
    args.insert(args.end(), {"sh", "-c", "echo env $RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $0", "-np"});
    Weftrun run(args, dir.path(), "np" + std::to_string(i++));
    ASSERT_EQ(run.wait(10s), 0) << run.err();
    std::set<int> ranks;
    for (const std::string& line : lines_of(run.out())) {
      std::smatch m;
      ASSERT_TRUE(std::regex_match(line, m, std::regex(R"(\[rank (\d)\] env (\d) (\d) (\d) -np)")))
          << line;
      EXPECT_EQ(m[1], m[2]);
      EXPECT_EQ(m[3], c.world_size);
      EXPECT_EQ(m[4], c.world_size);
      ranks.insert(std::stoi(m[2]));
    }
    EXPECT_EQ(ranks.size(), static_cast<std::size_t>(std::stoi(c.world_size))) << c.flags[0];
    EXPECT_EQ(*ranks.rbegin(), std::stoi(c.world_size) - 1);
  }
}

TEST(Weftrun, NpSplitsOverNodesOrSaysWhyNot) {
  TempDir dir;
  const std::string port = std::to_string(free_port());
  auto node = [&](const std::string& rank) {
    return std::vector<std::string>{"-np",
                                    "4",
                                    "--nnodes",
                                    "2",
                                    "--node-rank",
                                    rank,
                                    "--job-token",
                                    kTwoNodeToken,
                                    "--master-port",
                                    port,
                                    "--no-prefix",
                                    "sh",
                                    "-c",
                                    "echo $RANK $WORLD_SIZE $LOCAL_WORLD_SIZE"};
  };
  Weftrun node0(node("0"), dir.path(), "node0");
  Weftrun node1(node("1"), dir.path(), "node1");
  ASSERT_EQ(node0.wait(20s), 0) << node0.err();
  ASSERT_EQ(node1.wait(20s), 0) << node1.err();
  std::set<std::string> lines;
  for (const auto& line : lines_of(node0.out() + node1.out())) lines.insert(line);
  EXPECT_EQ(lines, (std::set<std::string>{"0 4 2", "1 4 2", "2 4 2", "3 4 2"}));

  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Case> cases = {
      {{"-np", "3", "--nnodes", "2", "true"},
       "weftrun: -np 3 does not divide evenly over --nnodes 2"},
      {{"-np", "4", "-n", "2", "true"}, "weftrun: -np 4 conflicts with --nproc-per-node 2"},
      {{"--nnodes", "2", "--nproc_per_node", "3", "-np", "4", "true"},
       "weftrun: -np 4 over --nnodes 2 is 2 ranks per node, which conflicts with "
       "--nproc-per-node 3"},
      {{"-np", "0", "true"}, "weftrun: --np: Value 0 not in range"},
  };
  int i = 0;
  for (const Case& c : cases) {
    Weftrun run(c.args, dir.path(), "bad" + std::to_string(i++));
    EXPECT_EQ(run.wait(5s), 2);
    EXPECT_EQ(run.err().rfind(c.message, 0), 0u) << run.err();
    EXPECT_EQ(count_of(run.err(), "\n"), 1) << run.err();
  }
}

TEST(Weftrun, TimeoutStopsTheJobAndExits124) {
  TempDir dir;
  std::string script = "echo $$ > " + sh_quote_dir(dir.path()) + "/pid.$RANK; exec sleep 30";
  Weftrun run({"-n", "2", "--timeout", "1s", "sh", "-c", script}, dir.path());
  EXPECT_EQ(run.wait(10s), 124) << run.err();
  EXPECT_GT(run.seconds(), 0.9);
  EXPECT_LT(run.seconds(), 4.0);
  std::string err = run.err();
  EXPECT_EQ(count_of(err,
                     "weftrun: the job ran past its time limit (--timeout 1s); stopping "
                     "the 2 ranks\n"),
            1)
      << err;
  std::vector<pid_t> pids = rank_pids(dir.path());
  EXPECT_EQ(pids.size(), 2u);
  expect_all_gone(pids);
}

TEST(Weftrun, TimeoutLeavesAJobThatEndsInTimeAlone) {
  TempDir dir;
  Weftrun run({"-n", "2", "--timeout", "5m", "sh", "-c", "echo done"}, dir.path());
  EXPECT_EQ(run.wait(10s), 0) << run.err();
  EXPECT_EQ(run.err(), "");
  for (const char* bad : {"0", "1.5", "-3", "5x", "m", "9000h"}) {
    Weftrun rejected({"--timeout", bad, "true"}, dir.path(), "bad");
    EXPECT_EQ(rejected.wait(5s), 2) << bad;
    EXPECT_EQ(rejected.err().rfind("weftrun: --timeout: expects a duration", 0), 0u)
        << rejected.err();
  }
}

TEST(Weftrun, OutputDirHoldsEachRanksOwnOutputToo) {
  TempDir dir;
  fs::path out_dir = dir.path() / "logs" / "job";  // made by weftrun
  for (const char* flag : {"", "--no-prefix"}) {
    const std::string prefix = flag;
    std::vector<std::string> args = {"-n", "2", "--output-dir", out_dir.string()};
    if (!prefix.empty()) args.push_back(prefix);
    args.insert(args.end(),
                {"sh", "-c", "echo out$RANK; echo err$RANK >&2; echo more$RANK; printf end$RANK"});
    Weftrun run(args, dir.path(), "run" + prefix);
    ASSERT_EQ(run.wait(10s), 0) << run.err();
    for (int r = 0; r < 2; ++r) {
      std::string R = std::to_string(r);
      fs::path rank_dir = out_dir / ("rank" + R);
      EXPECT_EQ(read_file(rank_dir / "stdout"), "out" + R + "\nmore" + R + "\nend" + R)
          << "the rank's bytes, unchanged";
      EXPECT_EQ(read_file(rank_dir / "stderr"), "err" + R + "\n");
      std::string shown = prefix.empty() ? "[rank " + R + "] " : "";
      EXPECT_EQ(count_of(run.out(), shown + "out" + R + "\n"), 1) << run.out();
      EXPECT_EQ(count_of(run.out(), shown + "end" + R + "\n"), 1) << run.out();
      EXPECT_EQ(count_of(run.err(), shown + "err" + R + "\n"), 1) << run.err();
    }
  }
  // A directory that cannot be made: one line, exit 1, no rank started.
  std::ofstream(dir.path() / "plain") << "a file";
  Weftrun bad({"--output-dir", (dir.path() / "plain").string(), "sh", "-c", "echo ran"}, dir.path(),
              "bad");
  EXPECT_EQ(bad.wait(10s), 1) << bad.err();
  EXPECT_EQ(bad.err().rfind("weftrun: cannot create ", 0), 0u) << bad.err();
  EXPECT_EQ(count_of(bad.err(), "\n"), 1) << bad.err();
  EXPECT_EQ(bad.out(), "");
}

TEST(Weftrun, TimestampGoesInFrontOfEveryLine) {
  TempDir dir;
  Weftrun run({"-n", "2", "--timestamp", "sh", "-c", "echo out$RANK; echo err$RANK >&2"},
              dir.path());
  ASSERT_EQ(run.wait(10s), 0) << run.err();
  const std::regex stamped(
      R"(\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] \[rank (\d)\] (out|err)\1)");
  std::vector<std::string> out = lines_of(run.out());
  std::vector<std::string> err = lines_of(run.err());
  EXPECT_EQ(out.size(), 2u);
  EXPECT_EQ(err.size(), 2u);
  for (const std::string& line : out) EXPECT_TRUE(std::regex_match(line, stamped)) << line;
  for (const std::string& line : err) EXPECT_TRUE(std::regex_match(line, stamped)) << line;
  // The wall clock in local time: today's date (or yesterday's, just after midnight).
  auto local_date = [](std::time_t when) {
    char date[16];
    std::tm local{};
    ::localtime_r(&when, &local);
    std::strftime(date, sizeof date, "%Y-%m-%d", &local);
    return std::string("[") + date;
  };
  std::time_t now = std::time(nullptr);
  std::string first = run.out().substr(0, 11);
  EXPECT_TRUE(first == local_date(now) || first == local_date(now - 60)) << run.out();

  Weftrun bare({"--timestamp", "--no-prefix", "echo", "hello"}, dir.path(), "bare");
  ASSERT_EQ(bare.wait(10s), 0) << bare.err();
  EXPECT_TRUE(std::regex_match(bare.out(),
                               std::regex(R"(\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] hello\n)")))
      << bare.out();
}

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--weftrun-trace-probe") == 0) return run_trace_probe();
  if (argc >= 3 && std::strcmp(argv[1], "--weftrun-flight-probe") == 0) {
    return run_flight_probe(argv[2]);
  }
  if (argc >= 2 && std::strcmp(argv[1], "--weftrun-store-probe") == 0) {
    try {
      return run_store_probe();
    } catch (const std::exception& error) {
      std::fprintf(stderr, "probe: %s\n", error.what());
      return 12;
    }
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
