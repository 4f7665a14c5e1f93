// weftrun_hosts_test — `weftrun --hosts ... --rsh ...` end to end (docs/weftrun.md, "Several
// hosts from one command").
//
// Two hosts without two machines: two network namespaces joined by a veth pair (names and
// addresses private to this test process), and a remote shell script that enters a namespace
// where ssh would log in. The script detaches the remote side as ssh does (a new session that
// keeps only the stdin pipe), so killing the script leaves the "remote" weftrun running and only
// the end of its stdin can stop it: what these tests check weftrun relies on. The ranks are this
// binary in probe mode, running a real weft all_reduce and checking its sum.
//
// The namespace tests need root and iproute2's `ip`; elsewhere they are skipped, saying why.
// Every command the test runs is bounded by timeout(1), and the namespaces, with anything still
// in them, are removed when a test ends, passed or failed.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/temp_paths.h"
#include "weft/weft.h"
#include "weftrun_process.h"

namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using weft::testing::eventually;
using weft::testing::read_file;
using weft::testing::TempDir;
using weft::testing::Weftrun;

std::string self_exe() { return fs::read_symlink("/proc/self/exe").string(); }

// --- probe mode: a rank of the job ------------------------------------------------------------

// All-reduces rank + 1 and checks the sum, then prints one line saying where it ran. Then by
// `mode`: "ok" returns; "fail R C": rank R exits with code C, the others wait to be stopped;
// "hang": every rank waits to be stopped.
int run_allreduce_probe(const std::vector<std::string>& mode) {
  auto group = weft::init_process_group();
  std::vector<double> value(1, group->rank() + 1.0);
  group->all_reduce(weft::BufferView(value));
  const double expected = group->size() * (group->size() + 1) / 2.0;
  if (value[0] != expected) {
    std::fprintf(stderr, "probe: rank %d got the sum %g, expected %g\n", group->rank(), value[0],
                 expected);
    return 20;
  }
  std::error_code error;
  std::string netns = fs::read_symlink("/proc/self/ns/net", error).string();
  std::printf("allreduce ok rank=%d size=%d sum=%g node=%s netns=%s\n", group->rank(),
              group->size(), value[0], std::getenv("NODE_RANK"), netns.c_str());
  std::fflush(stdout);
  if (mode.empty() || mode[0] == "ok") return 0;
  if (mode[0] == "fail" && mode.size() == 3 && group->rank() == std::stoi(mode[1])) {
    std::this_thread::sleep_for(300ms);
    std::_Exit(std::stoi(mode[2]));  // without leaving the group, like a crash
  }
  std::this_thread::sleep_for(30s);  // weftrun stops the job long before
  return 0;
}

// All-reduces 1 MiB again and again until it fails, then prints how long the rank had heard
// nothing when the error came, and the error. `outlive_sigterm`: weftrun's SIGTERM, sent to the
// other ranks once one has died, does not stop this rank, so that it reports what weft told it
// (weftrun sends SIGKILL 5 s later).
int run_until_failure_probe(bool outlive_sigterm) {
  using Clock = std::chrono::steady_clock;
  if (outlive_sigterm) ::signal(SIGTERM, SIG_IGN);  // weft leaves an ignored signal alone
  auto group = weft::init_process_group();
  std::vector<double> data(1 << 17, 1.0);
  auto last_done = Clock::now();
  try {
    for (int call = 0;; ++call) {
      group->all_reduce(weft::BufferView(data));
      last_done = Clock::now();
      if (call == 0) {
        std::printf("looping rank=%d pid=%d\n", group->rank(), static_cast<int>(::getpid()));
        std::fflush(stdout);
      }
      std::fill(data.begin(), data.end(), 1.0);
    }
  } catch (const weft::Error& error) {
    double silent = std::chrono::duration<double>(Clock::now() - last_done).count();
    std::printf("failed rank=%d after=%.1f %s\n", group->rank(), silent, error.what());
    std::fflush(stdout);
    return 3;
  }
}

// What each rank of an until-failure probe printed: its pid once it loops, and how long it
// had heard nothing when its error came, with the error.
struct UntilFailureLines {
  std::map<int, pid_t> pids;
  std::map<int, double> silent_seconds;
  std::map<int, std::string> errors;
};

UntilFailureLines until_failure_lines(const std::string& out) {
  static const std::regex looping(R"(\[rank (\d+)\] looping rank=\d+ pid=(\d+))");
  static const std::regex failed(R"(\[rank (\d+)\] failed rank=\d+ after=([\d.]+) (.*))");
  UntilFailureLines lines;
  std::istringstream text(out);
  for (std::string line; std::getline(text, line);) {
    std::smatch m;
    if (std::regex_match(line, m, looping)) {
      lines.pids[std::stoi(m[1])] = static_cast<pid_t>(std::stol(m[2]));
    } else if (std::regex_match(line, m, failed)) {
      lines.silent_seconds[std::stoi(m[1])] = std::stod(m[2]);
      lines.errors[std::stoi(m[1])] = m[3];
    }
  }
  return lines;
}

// Every rank an error message names, in weft's forms: "rank 2", "ranks 0, 2", "ranks 0-3, 5".
std::set<int> ranks_named(const std::string& error) {
  static const std::regex list(R"(\branks? (\d+(?:-\d+)?(?:, \d+(?:-\d+)?)*))");
  static const std::regex item(R"((\d+)(?:-(\d+))?)");
  std::set<int> named;
  for (std::sregex_iterator it(error.begin(), error.end(), list), end; it != end; ++it) {
    const std::string ranks = (*it)[1];
    for (std::sregex_iterator at(ranks.begin(), ranks.end(), item); at != end; ++at) {
      const int first = std::stoi((*at)[1]);
      const int last = (*at)[2].matched ? std::stoi((*at)[2]) : first;
      for (int rank = first; rank <= last; ++rank) named.insert(rank);
    }
  }
  return named;
}

// --- the hosts: network namespaces --------------------------------------------------------

// Runs `command` under sh with a deadline; its output is discarded. True when it exits 0.
bool run(const std::string& command) {
  std::string bounded = "timeout 10 " + command + " >/dev/null 2>&1";
  return std::system(bounded.c_str()) == 0;
}

// The output of `command`, bounded like run().
std::string output_of(const std::string& command) {
  std::string bounded = "timeout 10 " + command + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(bounded.c_str(), "r"), ::pclose);
  if (!pipe) return "";
  std::string text;
  std::array<char, 256> chunk{};
  while (std::fgets(chunk.data(), chunk.size(), pipe.get()) != nullptr) text += chunk.data();
  return text;
}

// `count` namespaces, "hosts" 10.201.0.1, 10.201.0.2, ..., each with eth0 and lo up. Two are
// joined by one veth pair; more, each by a veth pair to a bridge (a switch) in a namespace of
// its own. Removed, with every process still in them, on destruction.
class SimulatedHosts {
 public:
  // Null, with the reason in `why_not`, where namespaces cannot be made.
  static std::unique_ptr<SimulatedHosts> create(int count, std::string& why_not) {
    if (::geteuid() != 0) {
      why_not = "needs root to create network namespaces";
      return nullptr;
    }
    if (!run("ip -V")) {
      why_not = "needs iproute2's ip";
      return nullptr;
    }
    std::unique_ptr<SimulatedHosts> hosts(new SimulatedHosts(count));
    if (!hosts->set_up()) {
      why_not =
          "cannot create network namespaces, veth pairs and a bridge here (ip netns add / ip "
          "link add failed)";
      return nullptr;
    }
    return hosts;
  }

  ~SimulatedHosts() {
    for (const std::string& ns : namespaces_) {
      kill_everything_in(ns);
      run("ip netns delete " + ns);  // takes its ends of the veth pairs, and so the pairs, along
    }
  }

  int count() const { return count_; }
  static std::string address(int host) { return "10.201.0." + std::to_string(host + 1); }
  const std::string& netns(int host) const { return namespaces_[static_cast<std::size_t>(host)]; }

  // The pids in a namespace (ip netns pids).
  std::vector<pid_t> pids(int host) const {
    std::vector<pid_t> pids;
    std::istringstream words(output_of("ip netns pids " + netns(host)));
    for (pid_t pid; words >> pid;) pids.push_back(pid);
    return pids;
  }

  // The namespace's identity as a process inside it sees /proc/self/ns/net.
  std::string identity(int host) const {
    std::string text = output_of("ip netns exec " + netns(host) + " readlink /proc/self/ns/net");
    return text.substr(0, text.find('\n'));
  }

  // A remote shell for weftrun --rsh: `rsh HOST LINE` runs LINE in HOST's namespace, detached
  // like an ssh session: a session of its own, holding only the stdin it was given.
  std::string write_remote_shell(const fs::path& dir) const {
    fs::path script = dir / "netns-rsh";
    std::ofstream out(script);
    out << "#!/bin/sh\n"
        << "case \"$1\" in\n";
    for (int host = 0; host < count_; ++host) {
      out << "  " << address(host) << ") ns=" << netns(host) << " ;;\n";
    }
    out << "  *) echo \"netns-rsh: $1: no such host\" >&2; exit 255 ;;\n"
        << "esac\n"
        // A background command's stdin would be /dev/null: keep the real one on fd 3.
        << "exec 3<&0\n"
        << "ip netns exec \"$ns\" setsid sh -c \"$2\" <&3 3<&- &\n"
        << "wait $!\n";
    out.close();
    ::chmod(script.c_str(), 0755);
    return script.string();
  }

 private:
  explicit SimulatedHosts(int count) : count_(count), id_("wft" + std::to_string(::getpid())) {}

  bool add_namespace(const std::string& name) {
    if (!run("ip netns add " + name)) return false;
    namespaces_.push_back(name);
    return true;
  }

  // Moves `veth` into host `host`'s namespace as its eth0, with the host's address.
  bool plug_host(int host, const std::string& veth) {
    const std::string& ns = netns(host);
    return run("ip link set " + veth + " netns " + ns) &&
           run("ip -n " + ns + " link set " + veth + " name eth0") &&
           run("ip -n " + ns + " addr add " + address(host) + "/24 dev eth0") &&
           run("ip -n " + ns + " link set eth0 up") && run("ip -n " + ns + " link set lo up");
  }

  bool set_up() {
    for (int host = 0; host < count_; ++host) {
      if (!add_namespace(id_ + static_cast<char>('a' + host))) return false;
    }
    if (count_ == 2) {
      return run("ip link add " + id_ + "x type veth peer name " + id_ + "y") &&
             plug_host(0, id_ + "x") && plug_host(1, id_ + "y");
    }
    const std::string sw = id_ + "s";
    if (!add_namespace(sw) || !run("ip -n " + sw + " link add br0 type bridge") ||
        !run("ip -n " + sw + " link set br0 up")) {
      return false;
    }
    for (int host = 0; host < count_; ++host) {
      const std::string end = id_ + "h" + std::to_string(host);
      const std::string port = id_ + "p" + std::to_string(host);
      if (!run("ip link add " + end + " type veth peer name " + port) || !plug_host(host, end) ||
          !run("ip link set " + port + " netns " + sw) ||
          !run("ip -n " + sw + " link set " + port + " master br0") ||
          !run("ip -n " + sw + " link set " + port + " up")) {
        return false;
      }
    }
    return true;
  }

  void kill_everything_in(const std::string& ns) const {
    for (int round = 0; round < 50; ++round) {
      std::string pids = output_of("ip netns pids " + ns);
      if (pids.find_first_not_of(" \n") == std::string::npos) return;
      run("kill -9 " + std::regex_replace(pids, std::regex("\n"), " "));
      std::this_thread::sleep_for(100ms);
    }
  }

  int count_;
  std::string id_;
  std::vector<std::string> namespaces_;  // the hosts', then the switch's
};

// Runs weftrun over `HostCount` simulated hosts.
template <int HostCount>
class NetnsHostsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why_not;
    hosts_ = SimulatedHosts::create(HostCount, why_not);
    if (!hosts_) GTEST_SKIP() << why_not;
    rsh_ = hosts_->write_remote_shell(dir_.path());
  }
  void TearDown() override { hosts_.reset(); }

  // weftrun --hosts 10.201.0.1:2,10.201.0.2:2 --rsh <script> <extra> <this binary as a rank>
  std::unique_ptr<Weftrun> launch(const std::vector<std::string>& probe_mode,
                                  const std::vector<std::string>& extra = {},
                                  const std::string& hosts = "10.201.0.1:2,10.201.0.2:2") {
    std::vector<std::string> program = {self_exe(), "--weftrun-hosts-probe"};
    program.insert(program.end(), probe_mode.begin(), probe_mode.end());
    return launch_program(program, extra, hosts);
  }

  std::unique_ptr<Weftrun> launch_program(const std::vector<std::string>& program,
                                          const std::vector<std::string>& extra,
                                          const std::string& hosts,
                                          const std::string& timeout = "20",
                                          std::map<std::string, std::string> environment = {}) {
    std::vector<std::string> args = {"--hosts", hosts, "--rsh", rsh_};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), program.begin(), program.end());
    // The ranks use each namespace's own interface; a stuck collective gives up soon.
    environment["WEFT_SOCKET_IFNAME"] = "eth0";
    environment["WEFT_TIMEOUT"] = timeout;
    return std::make_unique<Weftrun>(args, dir_.path(), "weftrun", environment);
  }

  // `per_host` ranks on every host all-reducing 1 MiB in a loop (until-failure-past-sigterm)
  // with the timeout `timeout` (seconds), once every rank has looped; null if they did not.
  std::unique_ptr<Weftrun> start_all_reducing(int per_host, const std::string& timeout,
                                              std::map<std::string, std::string> environment) {
    const std::size_t ranks = static_cast<std::size_t>(per_host * HostCount);
    auto weftrun =
        launch_program({self_exe(), "--weftrun-hosts-probe", "until-failure-past-sigterm"}, {},
                       every_host(per_host), timeout, std::move(environment));
    if (!eventually([&] { return until_failure_lines(weftrun->out()).pids.size() == ranks; },
                    30s)) {
      ADD_FAILURE() << weftrun->out() << weftrun->err();
      return nullptr;
    }
    std::this_thread::sleep_for(200ms);
    return weftrun;
  }

  // `per_host` ranks on every host all-reduce 1 MiB in a loop; then `victim` is SIGKILLed.
  // Its connections end (no timeout to wait for): every other rank's collective fails within
  // the timeout, saying which rank is gone.
  void kill_a_rank_mid_collective(int per_host, int victim,
                                  std::map<std::string, std::string> environment = {}) {
    constexpr double kTimeoutSeconds = 5;
    const int ranks = per_host * HostCount;
    auto weftrun = start_all_reducing(per_host, "5", std::move(environment));
    ASSERT_TRUE(weftrun) << "the ranks did not all start looping";
    ::kill(until_failure_lines(weftrun->out()).pids.at(victim), SIGKILL);
    EXPECT_NE(weftrun->wait(60s), 0);
    const UntilFailureLines lines = until_failure_lines(weftrun->out());
    const std::string context = every_host(per_host) + ", rank " + std::to_string(victim) +
                                " killed\n" + weftrun->out() + weftrun->err();
    EXPECT_EQ(lines.errors.size(), static_cast<std::size_t>(ranks - 1)) << context;
    for (const auto& [rank, error] : lines.errors) {
      EXPECT_NE(rank, victim) << context;
      EXPECT_LE(lines.silent_seconds.at(rank), kTimeoutSeconds) << context;
      EXPECT_TRUE(ranks_named(error).count(victim)) << context;
    }
    expect_hosts_empty();
  }

  // `per_host` ranks on every host all-reduce 1 MiB in a loop; then `host`'s link goes down
  // (no FIN, no RST: silence). Every rank fails within 1.5 times its timeout, and names a rank
  // on the other side of the cut: a rank of `host` for the others, one of the others for
  // `host`'s ranks.
  void take_a_link_down_mid_collective(int per_host, int host,
                                       std::map<std::string, std::string> environment = {}) {
    constexpr double kTimeoutSeconds = 5;
    const int ranks = per_host * HostCount;
    auto weftrun = start_all_reducing(per_host, "5", std::move(environment));
    ASSERT_TRUE(weftrun) << "the ranks did not all start looping";
    ASSERT_TRUE(run("ip -n " + hosts_->netns(host) + " link set eth0 down"));
    EXPECT_NE(weftrun->wait(60s), 0);
    const UntilFailureLines lines = until_failure_lines(weftrun->out());
    const std::string context = every_host(per_host) + ", host " + std::to_string(host) +
                                " cut off\n" + weftrun->out() + weftrun->err();
    EXPECT_EQ(lines.errors.size(), static_cast<std::size_t>(ranks)) << context;
    auto on_cut_host = [&](int rank) { return rank / per_host == host; };
    for (const auto& [rank, error] : lines.errors) {
      EXPECT_LE(lines.silent_seconds.at(rank), kTimeoutSeconds * 1.5) << context;
      // A rank may wait on one of its own side that waits across the cut: the stall report
      // then names the far rank in a list ("ranks 0, 2 had not reached it").
      bool names_the_other_side = false;
      for (int other : ranks_named(error)) {
        if (on_cut_host(other) != on_cut_host(rank)) names_the_other_side = true;
      }
      EXPECT_TRUE(names_the_other_side) << "rank " << rank << ": " << error << "\n" << context;
    }
    expect_hosts_empty();
    ASSERT_TRUE(run("ip -n " + hosts_->netns(host) + " link set eth0 up"));  // for the next job
  }

  // "10.201.0.1:N,10.201.0.2:N,...": `per_host` ranks on each host.
  static std::string every_host(int per_host) {
    std::string hosts;
    for (int host = 0; host < HostCount; ++host) {
      hosts += (host ? "," : "") + SimulatedHosts::address(host) + ":" + std::to_string(per_host);
    }
    return hosts;
  }

  // Nothing of the job may outlive weftrun, on any host.
  void expect_hosts_empty() {
    for (int host = 0; host < HostCount; ++host) {
      EXPECT_TRUE(eventually([&] { return hosts_->pids(host).empty(); }, 10s))
          << hosts_->pids(host).size() << " processes left in " << hosts_->netns(host);
    }
  }

  TempDir dir_;
  std::unique_ptr<SimulatedHosts> hosts_;
  std::string rsh_;
};

using WeftrunHostsNetns = NetnsHostsTest<2>;
using WeftrunFourHostsNetns = NetnsHostsTest<4>;

std::vector<std::smatch> probe_lines(const std::string& out, std::vector<std::string>& storage) {
  static const std::regex pattern(
      R"(\[rank (\d)\] allreduce ok rank=(\d) size=(\d) sum=(\d+) node=(\d) netns=(\S+))");
  std::vector<std::smatch> matches;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) storage.push_back(line);
  for (const std::string& line : storage) {
    std::smatch m;
    if (std::regex_match(line, m, pattern)) matches.push_back(m);
  }
  return matches;
}

TEST_F(WeftrunHostsNetns, RunsOneAllReduceOverTwoHosts) {
  auto weftrun = launch({"ok"});
  ASSERT_EQ(weftrun->wait(60s), 0) << weftrun->err() << weftrun->out();
  std::vector<std::string> storage;
  std::set<int> ranks;
  for (const std::smatch& m : probe_lines(weftrun->out(), storage)) {
    int rank = std::stoi(m[1]);
    EXPECT_EQ(std::stoi(m[2]), rank);
    EXPECT_EQ(m[3], "4");
    EXPECT_EQ(m[4], "10") << "1 + 2 + 3 + 4";
    int node = rank / 2;  // by slot: ranks 0-1 on the first host, 2-3 on the second
    EXPECT_EQ(std::stoi(m[5]), node);
    EXPECT_EQ(m[6], hosts_->identity(node)) << "rank " << rank << " ran in the wrong namespace";
    ranks.insert(rank);
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2, 3})) << weftrun->out() << weftrun->err();
  expect_hosts_empty();
}

// The collective correctness sweep of the scale tier (tests/scale/scale_sweep.cc), every op
// and size against plain loops, on ranks spread over two hosts: 2 per host (hierarchical or flat
// as the cost model picks, shared memory within a host) and 1 per host (TCP only).
TEST_F(WeftrunHostsNetns, EveryCollectiveIsRightAcrossTwoHosts) {
  for (const std::string hosts : {"10.201.0.1:2,10.201.0.2:2", "10.201.0.1:1,10.201.0.2:1"}) {
    auto weftrun = launch_program({WEFT_SCALE_SWEEP_PATH}, {}, hosts);
    const int ranks = hosts.find(":2") != std::string::npos ? 4 : 2;
    ASSERT_EQ(weftrun->wait(60s), 0) << hosts << "\n" << weftrun->err() << weftrun->out();
    EXPECT_NE(
        weftrun->out().find("scale sweep: " + std::to_string(ranks) + " ranks, every result right"),
        std::string::npos)
        << hosts << "\n"
        << weftrun->out();
  }
  expect_hosts_empty();
}

// The hierarchical scenario of the multiproc tests (tests/multiproc/rank_program.cc: every
// collective, every root, uneven sizes, every dtype and op of reduce_scatter, a subgroup),
// each result against a plain loop, on real hosts: 2 + 2 and 3 + 3 ranks (weftrun runs as many
// on every host). Forced (WEFT_ALGO=hierarchical: unforced, the cost model may pick a flat
// algorithm at some sizes, tests/unit/selector_test.cc), every collective ran its hierarchical
// algorithm (the INFO line of each first choice says which).
TEST_F(WeftrunHostsNetns, EveryCollectiveRunsHierarchicallyAcrossTwoHosts) {
  for (const int per_host : {2, 3}) {
    const std::string slots = std::to_string(per_host);
    const std::string hosts = "10.201.0.1:" + slots + ",10.201.0.2:" + slots;
    const int ranks = 2 * per_host;
    auto weftrun = launch_program(
        {WEFT_TEST_RANK_PATH, "hierarchical_collectives"}, {}, hosts, "20",
        {{"WEFT_DEBUG", "info"}, {"WEFT_DEBUG_SUBSYS", "coll"}, {"WEFT_ALGO", "hierarchical"}});
    ASSERT_EQ(weftrun->wait(120s), 0) << hosts << "\n" << weftrun->err() << weftrun->out();
    for (int rank = 0; rank < ranks; ++rank) {
      EXPECT_NE(weftrun->out().find("[rank " + std::to_string(rank) + "] RESULT ok"),
                std::string::npos)
          << hosts << "\n"
          << weftrun->out();
    }
    const std::string err = weftrun->err();
    for (const char* op : {"all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter",
                           "all_to_all", "gather", "scatter", "barrier"}) {
      const std::regex ran(R"(\()" + std::to_string(ranks) + R"( ranks\): )" + op +
                           R"( up to \S+ \S+ runs (\w+))");
      std::set<std::string> algorithms;
      for (std::sregex_iterator it(err.begin(), err.end(), ran), end; it != end; ++it) {
        algorithms.insert((*it)[1]);
      }
      EXPECT_EQ(algorithms, std::set<std::string>{"hierarchical"}) << hosts << " " << op;
    }
  }
  expect_hosts_empty();
}

// A link taken down mid-collective (no FIN, no RST: the peer just goes silent): every rank's
// error comes within 1.5 times its timeout, and names the peer. The rank on the store's far side
// (rank 1) cannot reach the store either: its stuck-rank report and diagnosis must still end by
// the op's deadline (core/deadline_store.h), and its node's weftrun must keep relaying output.
TEST_F(WeftrunHostsNetns, ALinkTakenDownMidCollectiveFailsEveryRankInTimeNamingThePeer) {
  constexpr double kTimeoutSeconds = 5;
  auto weftrun = launch_program({self_exe(), "--weftrun-hosts-probe", "until-failure"}, {},
                                "10.201.0.1:1,10.201.0.2:1", "5");
  ASSERT_TRUE(eventually(
      [&] {
        const std::string out = weftrun->out();
        return out.find("looping rank=0") != std::string::npos &&
               out.find("looping rank=1") != std::string::npos;
      },
      30s))
      << weftrun->out() << weftrun->err();
  std::this_thread::sleep_for(200ms);
  ASSERT_TRUE(run("ip -n " + hosts_->netns(1) + " link set eth0 down"));
  EXPECT_NE(weftrun->wait(60s), 0);
  static const std::regex failed(R"(\[rank (\d)\] failed rank=\d after=([\d.]+) (.*))");
  std::set<int> reported;
  std::istringstream lines(weftrun->out());
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, failed)) continue;
    const int rank = std::stoi(m[1]);
    reported.insert(rank);
    EXPECT_LE(std::stod(m[2]), kTimeoutSeconds * 1.5) << line;
    EXPECT_NE(m[3].str().find("rank " + std::to_string(1 - rank)), std::string::npos) << line;
  }
  EXPECT_EQ(reported, (std::set<int>{0, 1})) << weftrun->out() << weftrun->err();
}

TEST_F(WeftrunHostsNetns, ARankFailingOnTheSecondHostStopsTheJobNamingRankAndHost) {
  auto weftrun = launch({"fail", "3", "7"});
  EXPECT_EQ(weftrun->wait(60s), 7) << weftrun->err();
  EXPECT_LT(weftrun->seconds(), 15.0);
  const std::string err = weftrun->err();
  EXPECT_TRUE(std::regex_search(
      err,
      std::regex(R"(weftrun: rank 3 \(node 1 on 10\.201\.0\.2, pid \d+\) exited with code 7)")))
      << err;
  // Node 0 heard it through the store and stopped its own ranks.
  EXPECT_TRUE(std::regex_search(
      err, std::regex(R"(weftrun: stopping the 2 ranks of node 0 on 10\.201\.0\.1: rank 3 )"
                      R"(\(node 1 on 10\.201\.0\.2, pid \d+\) exited with code 7)")))
      << err;
  expect_hosts_empty();
}

TEST_F(WeftrunHostsNetns, SigtermToTheLauncherStopsEveryHost) {
  auto weftrun = launch({"hang"});
  ASSERT_TRUE(eventually(
      [&] {
        std::vector<std::string> storage;
        return probe_lines(weftrun->out(), storage).size() == 4;
      },
      30s))
      << weftrun->out() << weftrun->err();
  ::kill(weftrun->pid(), SIGTERM);
  EXPECT_EQ(weftrun->wait(30s), 128 + SIGTERM) << weftrun->err();
  // A signal to the remote shell would stop nothing over there: each remote weftrun stops
  // because its stdin ended, or because the other node, whose stdin ended first, said so through
  // the store. Either way it still reported back through the remote shell.
  const std::string err = weftrun->err();
  EXPECT_NE(err.find("weftrun: the launcher of node "), std::string::npos) << err;
  for (int node = 0; node < 2; ++node) {
    std::string name =
        "node " + std::to_string(node) + " on 10\\.201\\.0\\." + std::to_string(node + 1);
    EXPECT_TRUE(std::regex_search(
        err, std::regex("weftrun: (the launcher of " + name +
                        R"( closed its stdin \(it is stopping the job, or gone\); stopping the 2 )"
                        "ranks|stopping the 2 "
                        "ranks of " +
                        name + ": the launcher of node)")))
        << name << "\n"
        << err;
  }
  expect_hosts_empty();
}

TEST_F(WeftrunHostsNetns, SigkillOfTheLauncherStopsEveryHost) {
  auto weftrun = launch({"hang"});
  ASSERT_TRUE(eventually(
      [&] {
        std::vector<std::string> storage;
        return probe_lines(weftrun->out(), storage).size() == 4;
      },
      30s))
      << weftrun->out() << weftrun->err();
  // Nothing of the launcher can act now; the end of the agents' stdin is all they get.
  ::kill(weftrun->pid(), SIGKILL);
  EXPECT_EQ(weftrun->wait(10s), 128 + SIGKILL);
  expect_hosts_empty();
}

TEST_F(WeftrunHostsNetns, AHostTheRemoteShellCannotReachFailsTheJob) {
  auto weftrun = launch({"ok"}, {"--join-timeout", "3"}, "10.201.0.1:1,10.201.0.9:1");
  EXPECT_EQ(weftrun->wait(30s), 255) << weftrun->err();
  const std::string err = weftrun->err();
  EXPECT_NE(err.find("netns-rsh: 10.201.0.9: no such host"), std::string::npos) << err;
  EXPECT_NE(err.find("weftrun: node 1 (10.201.0.9) exited with code 255"), std::string::npos)
      << err;
  expect_hosts_empty();
}

TEST_F(WeftrunHostsNetns, ARankKilledOnTheOtherHostFailsEveryRankNamingIt) {
  kill_a_rank_mid_collective(/*per_host=*/1, /*victim=*/1);
  kill_a_rank_mid_collective(/*per_host=*/2, /*victim=*/2);  // a host's leader
}

// --- several connections per pair of ranks (WEFT_SOCKET_NSTREAMS) ----------------------------

// The sweep with a 6 MB count on four connections per pair: its messages across the hosts are
// striped (each rank says on how many connections, at INFO), and every result is right.
TEST_F(WeftrunHostsNetns, EveryCollectiveIsRightOnFourConnectionsPerPair) {
  for (const std::string hosts : {"10.201.0.1:1,10.201.0.2:1", "10.201.0.1:2,10.201.0.2:2"}) {
    auto weftrun = launch_program({WEFT_SCALE_SWEEP_PATH, "--large"}, {}, hosts, "20",
                                  {{"WEFT_SOCKET_NSTREAMS", "4"},
                                   {"WEFT_DEBUG", "info"},
                                   {"WEFT_DEBUG_SUBSYS", "transport"}});
    const int ranks = hosts.find(":2") != std::string::npos ? 4 : 2;
    ASSERT_EQ(weftrun->wait(120s), 0) << hosts << "\n" << weftrun->err() << weftrun->out();
    EXPECT_NE(
        weftrun->out().find("scale sweep: " + std::to_string(ranks) + " ranks, every result right"),
        std::string::npos)
        << hosts << "\n"
        << weftrun->out();
    const std::string log = weftrun->out() + weftrun->err();
    EXPECT_NE(log.find("sends large messages to rank"), std::string::npos) << log;
    EXPECT_NE(log.find("on 4 connections (WEFT_SOCKET_NSTREAMS=4)"), std::string::npos) << log;
  }
  expect_hosts_empty();
}

// A rank killed, and a link taken down, while 1 MiB all_reduces run striped over the pair's
// connections: every other rank fails in time naming the rank, as on one connection.
TEST_F(WeftrunHostsNetns, ARankKilledOnFourConnectionsPerPairFailsEveryRankNamingIt) {
  kill_a_rank_mid_collective(/*per_host=*/1, /*victim=*/1, {{"WEFT_SOCKET_NSTREAMS", "4"}});
}

TEST_F(WeftrunHostsNetns, ALinkTakenDownOnFourConnectionsPerPairFailsEveryRankInTime) {
  take_a_link_down_mid_collective(/*per_host=*/1, /*host=*/1, {{"WEFT_SOCKET_NSTREAMS", "4"}});
}

// --- four hosts on a bridge -----------------------------------------------------------------

// The scale tier's correctness sweep (every op and size against plain loops) on four hosts, one
// rank each (TCP only) and two each (shared memory within a host, hierarchical or flat).
TEST_F(WeftrunFourHostsNetns, EveryCollectiveIsRightAcrossFourHosts) {
  for (const int per_host : {1, 2}) {
    auto weftrun = launch_program({WEFT_SCALE_SWEEP_PATH}, {}, every_host(per_host));
    const int ranks = 4 * per_host;
    ASSERT_EQ(weftrun->wait(120s), 0) << every_host(per_host) << "\n"
                                      << weftrun->err() << weftrun->out();
    EXPECT_NE(
        weftrun->out().find("scale sweep: " + std::to_string(ranks) + " ranks, every result right"),
        std::string::npos)
        << every_host(per_host) << "\n"
        << weftrun->out();
  }
  expect_hosts_empty();
}

// The hierarchical scenario (every collective, root, uneven sizes, reduce_scatter's dtypes and
// ops, a subgroup) forced hierarchical on four hosts of two ranks: four leaders.
TEST_F(WeftrunFourHostsNetns, EveryCollectiveRunsHierarchicallyAcrossFourHosts) {
  auto weftrun = launch_program({WEFT_TEST_RANK_PATH, "hierarchical_collectives"}, {},
                                every_host(2), "20", {{"WEFT_ALGO", "hierarchical"}});
  ASSERT_EQ(weftrun->wait(180s), 0) << weftrun->err() << weftrun->out();
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_NE(weftrun->out().find("[rank " + std::to_string(rank) + "] RESULT ok"),
              std::string::npos)
        << weftrun->out();
  }
  expect_hosts_empty();
}

TEST_F(WeftrunFourHostsNetns, ARankKilledOnAnotherHostFailsEveryRankNamingIt) {
  kill_a_rank_mid_collective(/*per_host=*/1, /*victim=*/2);
  kill_a_rank_mid_collective(/*per_host=*/2, /*victim=*/5);  // not its host's leader
}

// A host's link taken down under a 1 MiB all_reduce loop (no FIN, no RST: silence).
TEST_F(WeftrunHostsNetns, ALinkTakenDownUnderTwoRanksPerHostFailsEveryRankInTime) {
  take_a_link_down_mid_collective(/*per_host=*/2, /*host=*/1);
}

TEST_F(WeftrunFourHostsNetns, ALinkTakenDownMidCollectiveFailsEveryRankInTime) {
  take_a_link_down_mid_collective(/*per_host=*/1, /*host=*/2);
  take_a_link_down_mid_collective(/*per_host=*/2, /*host=*/2);
}

// --- without namespaces -----------------------------------------------------------------------

TEST(WeftrunHosts, NodesOnThisHostStartWithoutTheRemoteShell) {
  TempDir dir;
  // --rsh false: any use of the remote shell would fail the job.
  Weftrun weftrun({"--hosts", "localhost:1,127.0.0.1:1", "--rsh", "false", self_exe(),
                   "--weftrun-hosts-probe", "ok"},
                  dir.path());
  ASSERT_EQ(weftrun.wait(60s), 0) << weftrun.err();
  std::vector<std::string> storage;
  std::set<int> nodes;
  for (const std::smatch& m : probe_lines(weftrun.out(), storage)) {
    EXPECT_EQ(m[3], "2");
    EXPECT_EQ(m[4], "3");
    nodes.insert(std::stoi(m[5]));
  }
  EXPECT_EQ(nodes, (std::set<int>{0, 1})) << weftrun.out();
}

TEST(WeftrunHosts, GivesEveryNodeTheVariablesOfDashXAndWeft) {
  TempDir dir;
  Weftrun weftrun({"--hosts", "localhost:1,127.0.0.1:1", "-x", "HOSTS_TEST_SET=given", "-x",
                   "HOSTS_TEST_INHERITED", "sh", "-c",
                   "echo node $NODE_RANK: $HOSTS_TEST_SET $HOSTS_TEST_INHERITED $WEFT_HOSTS_TEST"},
                  dir.path(), "weftrun",
                  {{"HOSTS_TEST_INHERITED", "inherited"}, {"WEFT_HOSTS_TEST", "weft"}});
  ASSERT_EQ(weftrun.wait(30s), 0) << weftrun.err();
  const std::string out = weftrun.out();
  EXPECT_NE(out.find("[rank 0] node 0: given inherited weft\n"), std::string::npos) << out;
  EXPECT_NE(out.find("[rank 1] node 1: given inherited weft\n"), std::string::npos) << out;
}

TEST(WeftrunHosts, RefusesImpossiblePlacementsWithTheNumbers) {
  TempDir dir;
  fs::path hostfile = dir.path() / "hosts";
  std::ofstream(hostfile) << "# two hosts\nnode-a slots=2\n\nnode-b slots=2  # spare\n";
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Case> cases = {
      {{"--hostfile", hostfile.string(), "-np", "6", "true"},
       "weftrun: -np 6 is more than the 4 slots of the hosts node-a:2, node-b:2; give fewer "
       "ranks, more slots, or --oversubscribe (see weftrun --help)\n"},
      {{"--hosts", "a:2,b:2", "--nnodes", "2", "true"},
       "weftrun: --nnodes cannot be given with --hosts or --hostfile, which decide the nodes "
       "(see weftrun --help)\n"},
      {{"--hosts", "a", "--hostfile", hostfile.string(), "true"},
       "weftrun: give --hosts or --hostfile, not both (see weftrun --help)\n"},
      {{"--hosts", "localhost:1,192.0.2.1:1", "true"},
       "weftrun: node 0 would host the job's store at 'localhost', which is loopback: the "
       "other hosts cannot reach it there; list this host by a name or address they can reach, "
       "or give --master-addr (see weftrun --help)\n"},
  };
  for (const Case& c : cases) {
    Weftrun weftrun(c.args, dir.path());
    EXPECT_EQ(weftrun.wait(20s), 2) << c.args[1];
    EXPECT_EQ(weftrun.err(), c.message);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--weftrun-hosts-probe") == 0) {
    try {
      if (argc >= 3 && std::strcmp(argv[2], "until-failure") == 0) {
        return run_until_failure_probe(/*outlive_sigterm=*/false);
      }
      if (argc >= 3 && std::strcmp(argv[2], "until-failure-past-sigterm") == 0) {
        return run_until_failure_probe(/*outlive_sigterm=*/true);
      }
      return run_allreduce_probe(std::vector<std::string>(argv + 2, argv + argc));
    } catch (const std::exception& error) {
      std::fprintf(stderr, "probe: %s\n", error.what());
      return 21;
    }
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
