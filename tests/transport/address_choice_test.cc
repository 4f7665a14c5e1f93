// Address choice end to end, with weft_address_rank processes as the ranks:
// - IPv6 loopback: 3 ranks with MASTER_ADDR=::1 all-reduce over TCP;
// - lazy reading of peers' records: six one-rank "hosts" that talk around a ring;
// - two hosts (network namespaces) whose route to the rendezvous host goes over a management
//   network on which they cannot reach each other, joined by a second, "fast" network: without
//   WEFT_SOCKET_IFNAME each finds the other's fast address by trying, and logs it; with a
//   WEFT_SOCKET_IFNAME that matches both networks, each listens on both;
// - two hosts with only IPv6 between them (MASTER_ADDR=fd00:203::1).
//
// The namespace tests need root and iproute2's `ip`; elsewhere they are skipped, saying why.
// Names (wac<pid>...) and addresses (10.203.0.0/16, fd00:203::/64) are private to this test
// process; every command is bounded by timeout(1) and every process by a deadline, and the
// namespaces, with anything left in them, are removed when a test ends, passed or failed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/child_processes.h"
#include "support/free_port.h"
#include "transport/tcp/candidate_dial.h"

namespace weft::testing {
namespace {

using namespace std::chrono_literals;

// Runs `command` under sh with a deadline, its output discarded; true when it exits 0.
bool run(const std::string& command) {
  std::string bounded = "timeout 10 " + command + " >/dev/null 2>&1";
  return std::system(bounded.c_str()) == 0;
}

std::string output_of(const std::string& command) {
  std::string bounded = "timeout 10 " + command + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(bounded.c_str(), "r"), ::pclose);
  if (!pipe) return "";
  std::string text;
  std::array<char, 256> chunk{};
  while (std::fgets(chunk.data(), chunk.size(), pipe.get()) != nullptr) text += chunk.data();
  return text;
}

// Network namespaces named wac<pid><letter>, made by `commands` (where {x} stands for the
// namespace or link name prefix wac<pid>), removed with everything in them on destruction.
class Namespaces {
 public:
  static std::unique_ptr<Namespaces> create(const std::vector<char>& letters,
                                            const std::vector<std::string>& commands,
                                            std::string& why_not) {
    if (::geteuid() != 0) {
      why_not = "needs root to create network namespaces";
      return nullptr;
    }
    if (!run("ip -V")) {
      why_not = "needs iproute2's ip";
      return nullptr;
    }
    std::unique_ptr<Namespaces> made(new Namespaces());
    for (char letter : letters) {
      std::string name = made->prefix_ + letter;
      if (!run("ip netns add " + name)) {
        why_not = "cannot create network namespaces here (ip netns add failed)";
        return nullptr;
      }
      made->names_.push_back(name);
    }
    for (const std::string& command : commands) {
      std::string expanded = std::regex_replace(command, std::regex("\\{x\\}"), made->prefix_);
      if (!run(expanded)) {
        why_not = "cannot set up the test's networks: '" + expanded + "' failed";
        return nullptr;
      }
    }
    return made;
  }

  ~Namespaces() {
    for (const std::string& name : names_) {
      kill_everything_in(name);
      run("ip netns delete " + name);  // takes its ends of the veth pairs, and so the pairs
    }
  }

  std::string name(char letter) const { return prefix_ + letter; }

 private:
  Namespaces() : prefix_("wac" + std::to_string(::getpid())) {}

  static void kill_everything_in(const std::string& name) {
    for (int round = 0; round < 50; ++round) {
      std::string pids = output_of("ip netns pids " + name);
      if (pids.find_first_not_of(" \n") == std::string::npos) return;
      run("kill -9 " + std::regex_replace(pids, std::regex("\n"), " "));
      std::this_thread::sleep_for(100ms);
    }
  }

  std::string prefix_;
  std::vector<std::string> names_;
};

using Environment = std::map<std::string, std::string>;

// What every rank of these tests is told besides its rank: TCP only, INFO lines of init and
// transport, a short timeout, and nothing inherited that chooses an interface for it.
Environment rank_environment(int rank, int world_size) {
  return {{"RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(world_size)},
          {"WEFT_TRANSPORT", "tcp"},
          {"WEFT_DEBUG", "info"},
          {"WEFT_DEBUG_SUBSYS", "init,transport"},
          {"WEFT_DEBUG_FILE", ""},
          {"WEFT_TIMEOUT", "30s"},
          {"WEFT_SOCKET_IFNAME", ""},
          {"WEFT_STORE_ADDR", ""},
          {"WEFT_JOB_TOKEN", "address-choice-test-token"}};
}

// weft_address_rank with `args`, inside `netns` unless it is empty.
std::vector<std::string> rank_command(const std::string& netns,
                                      const std::vector<std::string>& args) {
  std::vector<std::string> argv;
  if (!netns.empty()) argv = {"/usr/bin/env", "ip", "netns", "exec", netns};
  argv.push_back(WEFT_ADDRESS_RANK_PATH);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// Starts one rank per (namespace, environment) and waits for all of them.
std::vector<ChildResult> run_job(const std::vector<std::string>& namespaces,
                                 const std::vector<Environment>& environments,
                                 const std::string& mode = "allreduce") {
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (std::size_t rank = 0; rank < environments.size(); ++rank) {
    ranks.push_back(
        std::make_unique<ChildProcess>(rank_command(namespaces[rank], {mode}), environments[rank]));
  }
  std::vector<ChildResult> results;
  for (auto& rank : ranks) results.push_back(rank->wait(60s));
  return results;
}

void expect_all_reduced(const std::vector<ChildResult>& results) {
  const int size = static_cast<int>(results.size());
  for (int rank = 0; rank < size; ++rank) {
    const ChildResult& result = results[static_cast<std::size_t>(rank)];
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_FALSE(result.timed_out);
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    std::string expected = "allreduce ok rank=" + std::to_string(rank) +
                           " size=" + std::to_string(size) +
                           " sum=" + std::to_string(size * (size + 1) / 2);
    EXPECT_NE(result.out.find(expected), std::string::npos) << result.out << result.err;
  }
}

// The address in rank `rank`'s line "rank R reaches rank P at ADDR ...", or "".
std::string reached(const ChildResult& result, int rank, int peer, std::string* line = nullptr) {
  std::regex pattern("rank " + std::to_string(rank) + " reaches rank " + std::to_string(peer) +
                     " at (\\S+)[^\\n]*");
  std::smatch match;
  if (!std::regex_search(result.err, match, pattern)) return "";
  if (line) *line = match[0];
  return match[1];
}

TEST(AddressChoiceIpv6, ThreeRanksOnLoopbackAllReduceOverTcp) {
  int port = 0;
  try {
    port = free_port("::1");
  } catch (const std::exception& e) {
    GTEST_SKIP() << "no IPv6 loopback here: " << e.what();
  }
  std::vector<Environment> environments;
  for (int rank = 0; rank < 3; ++rank) {
    Environment environment = rank_environment(rank, 3);
    environment["MASTER_ADDR"] = "::1";
    environment["MASTER_PORT"] = std::to_string(port);
    environments.push_back(environment);
  }
  std::vector<ChildResult> results = run_job({"", "", ""}, environments);
  expect_all_reduced(results);
  // A loopback job listens on loopback only, and its ranks reach each other there.
  EXPECT_NE(results[1].err.find("listens on [::1]:"), std::string::npos) << results[1].err;
  bool reached_over_ipv6 = false;
  for (int rank = 0; rank < 3; ++rank) {
    for (int peer = 0; peer < 3; ++peer) {
      if (reached(results[static_cast<std::size_t>(rank)], rank, peer).starts_with("[::1]:")) {
        reached_over_ipv6 = true;
      }
    }
  }
  EXPECT_TRUE(reached_over_ipv6) << results[0].err << results[1].err << results[2].err;
}

// Six ranks, each on a host of its own (WEFT_HOST_ID), that talk to their ring neighbours only:
// none reads the rendezvous record of a rank it does not talk to (rank 0, which writes the
// job's directory, has read them all by then and reads none later).
TEST(AddressChoiceLazy, ARankReadsTheRecordsOfThePeersItTalksToOnly) {
  const int size = 6;
  const int port = free_port();
  std::vector<Environment> environments;
  for (int rank = 0; rank < size; ++rank) {
    Environment environment = rank_environment(rank, size);
    environment["MASTER_ADDR"] = "127.0.0.1";
    environment["MASTER_PORT"] = std::to_string(port);
    environment["WEFT_HOST_ID"] = "host" + std::to_string(rank);
    environment["WEFT_DEBUG"] = "debug";
    environments.push_back(environment);
  }
  std::vector<ChildResult> results =
      run_job(std::vector<std::string>(size, ""), environments, "ring");
  std::size_t reads = 0;
  for (int rank = 0; rank < size; ++rank) {
    const ChildResult& result = results[static_cast<std::size_t>(rank)];
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    EXPECT_NE(result.out.find("ring ok rank=" + std::to_string(rank)), std::string::npos)
        << result.out << result.err;
    std::set<int> read;
    std::regex line("rank " + std::to_string(rank) + " reads the record of rank ([0-9]+)");
    for (auto it = std::sregex_iterator(result.err.begin(), result.err.end(), line);
         it != std::sregex_iterator(); ++it) {
      read.insert(std::stoi((*it)[1]));
    }
    // A neighbour that connected first needs no reading.
    std::set<int> neighbours = {(rank + 1) % size, (rank + size - 1) % size};
    if (rank == 0) {
      EXPECT_TRUE(read.empty()) << result.err;
    }
    reads += read.size();
    EXPECT_TRUE(std::includes(neighbours.begin(), neighbours.end(), read.begin(), read.end()))
        << result.err;
  }
  // Every link of the ring away from rank 0 was made by one end, which read the other's record.
  EXPECT_GE(reads, static_cast<std::size_t>(size - 2));
}

// Three namespaces: s serves the store at 10.203.0.1; a and b reach it over a management
// network, 10.203.0.0/16, that s does not forward, so that a and b cannot reach each other's
// management address (10.203.1.1, 10.203.2.2) though both lie in their subnet; a fast network,
// 10.203.3.0/24, joins a and b. Each rank's route to the store is its management address: with
// one address per rank, as before, a and b could not connect at all.
std::vector<std::string> management_and_fast_networks() {
  return {
      "ip link add {x}sa type veth peer name {x}as",
      "ip link add {x}sb type veth peer name {x}bs",
      "ip link add {x}ab type veth peer name {x}ba",
      "ip link set {x}sa netns {x}s",
      "ip link set {x}sb netns {x}s",
      "ip link set {x}as netns {x}a",
      "ip link set {x}ab netns {x}a",
      "ip link set {x}bs netns {x}b",
      "ip link set {x}ba netns {x}b",
      "ip netns exec {x}s sysctl -qw net.ipv4.ip_forward=0",
      "ip -n {x}s link set lo up",
      "ip -n {x}s addr add 10.203.0.1/32 dev lo",
      "ip -n {x}s link set {x}sa up",
      "ip -n {x}s link set {x}sb up",
      "ip -n {x}s route add 10.203.1.1/32 dev {x}sa",
      "ip -n {x}s route add 10.203.2.2/32 dev {x}sb",
      "ip -n {x}a link set lo up",
      "ip -n {x}a addr add 10.203.1.1/16 dev {x}as",
      "ip -n {x}a link set {x}as up",
      "ip -n {x}a addr add 10.203.3.1/24 dev {x}ab",
      "ip -n {x}a link set {x}ab up",
      "ip -n {x}b link set lo up",
      "ip -n {x}b addr add 10.203.2.2/16 dev {x}bs",
      "ip -n {x}b link set {x}bs up",
      "ip -n {x}b addr add 10.203.3.2/24 dev {x}ba",
      "ip -n {x}b link set {x}ba up",
  };
}

TEST(AddressChoiceNetns, HostsThatShareOnlyTheirSecondNetworkFindIt) {
  std::string why_not;
  auto namespaces = Namespaces::create({'s', 'a', 'b'}, management_and_fast_networks(), why_not);
  if (!namespaces) GTEST_SKIP() << why_not;
  const int store_port = 29203;
  Environment store_environment = {{"WEFT_JOB_TOKEN", "address-choice-test-token"}};
  // Serves for 90 s at most; killed when the test ends.
  ChildProcess store(
      rank_command(namespaces->name('s'), {"store", std::to_string(store_port), "90"}),
      store_environment);
  std::this_thread::sleep_for(300ms);  // the ranks' store clients also retry while it starts
  std::vector<Environment> environments;
  for (int rank = 0; rank < 2; ++rank) {
    Environment environment = rank_environment(rank, 2);
    environment["WEFT_STORE_ADDR"] = "10.203.0.1:" + std::to_string(store_port);
    environment["MASTER_ADDR"] = "10.203.0.1";
    environments.push_back(environment);
  }
  std::vector<ChildResult> results =
      run_job({namespaces->name('a'), namespaces->name('b')}, environments);
  expect_all_reduced(results);

  // Each published its management address first, and reached the other over the fast network
  // after its management address timed out.
  EXPECT_NE(results[1].err.find("publishes 10.203.2.2:"), std::string::npos) << results[1].err;
  std::string line;
  std::string zero_to_one = reached(results[0], 0, 1, &line);
  std::string one_to_zero = reached(results[1], 1, 0);
  EXPECT_TRUE(zero_to_one.starts_with("10.203.3.2:") || one_to_zero.starts_with("10.203.3.1:"))
      << results[0].err << results[1].err;
  if (!zero_to_one.empty()) {
    EXPECT_TRUE(zero_to_one.starts_with("10.203.3.2:")) << line;
    EXPECT_NE(line.find("(tried 10.203.2.2:"), std::string::npos) << line;
  }
}

// WEFT_SOCKET_IFNAME naming both of a host's interfaces (by their common prefix): the first in
// the kernel's order is the management one, which the other host cannot reach. A rank listens
// on every address of every matching interface, so the fast network still joins them.
TEST(AddressChoiceNetns, SocketIfnameMatchingSeveralInterfacesListensOnEach) {
  std::string why_not;
  auto namespaces = Namespaces::create({'s', 'a', 'b'}, management_and_fast_networks(), why_not);
  if (!namespaces) GTEST_SKIP() << why_not;
  const int store_port = 29204;
  Environment store_environment = {{"WEFT_JOB_TOKEN", "address-choice-test-token"}};
  ChildProcess store(
      rank_command(namespaces->name('s'), {"store", std::to_string(store_port), "90"}),
      store_environment);
  std::this_thread::sleep_for(300ms);
  std::string link_prefix = namespaces->name('a');
  link_prefix.pop_back();  // wac<pid>: every veth end of this test
  std::vector<Environment> environments;
  for (int rank = 0; rank < 2; ++rank) {
    Environment environment = rank_environment(rank, 2);
    environment["WEFT_STORE_ADDR"] = "10.203.0.1:" + std::to_string(store_port);
    environment["MASTER_ADDR"] = "10.203.0.1";
    environment["WEFT_SOCKET_IFNAME"] = link_prefix;
    environments.push_back(environment);
  }
  std::vector<ChildResult> results =
      run_job({namespaces->name('a'), namespaces->name('b')}, environments);
  expect_all_reduced(results);
  std::regex listens(
      "listens on 10\\.203\\.2\\.2:[0-9]+, 10\\.203\\.3\\.2:[0-9]+ \\(WEFT_SOCKET_IFNAME\\)");
  EXPECT_TRUE(std::regex_search(results[1].err, listens)) << results[1].err;
  std::string zero_to_one = reached(results[0], 0, 1);
  std::string one_to_zero = reached(results[1], 1, 0);
  EXPECT_TRUE(zero_to_one.starts_with("10.203.3.2:") || one_to_zero.starts_with("10.203.3.1:"))
      << results[0].err << results[1].err;
}

// Two namespaces joined by one veth pair carrying nothing but fd00:203::1/64 and ::2.
TEST(AddressChoiceNetns, Ipv6OnlyHostsAllReduce) {
  std::string why_not;
  auto namespaces = Namespaces::create(
      {'a', 'b'},
      {"ip link add {x}ab type veth peer name {x}ba", "ip link set {x}ab netns {x}a",
       "ip link set {x}ba netns {x}b", "ip -n {x}a link set lo up", "ip -n {x}b link set lo up",
       "ip -n {x}a addr add fd00:203::1/64 dev {x}ab nodad",
       "ip -n {x}b addr add fd00:203::2/64 dev {x}ba nodad", "ip -n {x}a link set {x}ab up",
       "ip -n {x}b link set {x}ba up"},
      why_not);
  if (!namespaces) GTEST_SKIP() << why_not;
  std::vector<Environment> environments;
  for (int rank = 0; rank < 2; ++rank) {
    Environment environment = rank_environment(rank, 2);
    environment["MASTER_ADDR"] = "fd00:203::1";
    environment["MASTER_PORT"] = "29203";
    environments.push_back(environment);
  }
  std::vector<ChildResult> results =
      run_job({namespaces->name('a'), namespaces->name('b')}, environments);
  expect_all_reduced(results);
  std::string zero_to_one = reached(results[0], 0, 1);
  std::string one_to_zero = reached(results[1], 1, 0);
  EXPECT_TRUE(zero_to_one.starts_with("[fd00:203::2]:") ||
              one_to_zero.starts_with("[fd00:203::1]:"))
      << results[0].err << results[1].err;
}

}  // namespace
}  // namespace weft::testing
