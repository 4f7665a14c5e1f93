// host_list_test — weftrun's --hosts and --hostfile parsing, the placement of ranks on the hosts
// (-np, -n, --oversubscribe) and the command line that starts a node on another host. No process
// is started and nothing touches the network.

#include "host_list.h"

#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "node_command.h"
#include "rank_placement.h"

namespace weft::run {
namespace {

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "(no error)";
}

std::string placed(const std::vector<HostSlots>& hosts, int total, int per_host = 0,
                   bool oversubscribe = false) {
  Placement placement = place_ranks(hosts, {total, per_host, oversubscribe});
  std::string text;
  for (const std::string& host : placement.hosts) text += (text.empty() ? "" : ",") + host;
  return text + " x" + std::to_string(placement.ranks_per_host);
}

TEST(HostList, ReadsHostsWithAndWithoutSlots) {
  std::vector<HostSlots> hosts = parse_host_list("a:2,b.example.org:16,10.0.0.3,[fd00::1]:4");
  ASSERT_EQ(hosts.size(), 4u);
  EXPECT_EQ(hosts[0].host, "a");
  EXPECT_EQ(hosts[0].slots, 2);
  EXPECT_EQ(hosts[1].host, "b.example.org");
  EXPECT_EQ(hosts[1].slots, 16);
  EXPECT_EQ(hosts[2].host, "10.0.0.3");
  EXPECT_EQ(hosts[2].slots, 1) << "a bare host has one slot, as mpirun's --host";
  EXPECT_EQ(hosts[3].host, "fd00::1");
  EXPECT_EQ(hosts[3].slots, 4);
  EXPECT_EQ(describe_hosts(hosts), "a:2, b.example.org:16, 10.0.0.3:1, [fd00::1]:4");
}

TEST(HostList, AHostListedTwiceAddsItsSlotsWhereItFirstCame) {
  std::vector<HostSlots> hosts = parse_host_list("a,b:2,a:3");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].host, "a");
  EXPECT_EQ(hosts[0].slots, 4);
  EXPECT_EQ(hosts[1].slots, 2);
}

TEST(HostList, RefusesMalformedItemsNamingThem) {
  EXPECT_EQ(error_of([] { parse_host_list("a:2,,b"); }), "--hosts: 'a:2,,b' has an empty item");
  EXPECT_EQ(error_of([] { parse_host_list("a:2,"); }), "--hosts: 'a:2,' has an empty item");
  EXPECT_EQ(error_of([] { parse_host_list("a:0"); }),
            "--hosts: 'a:0': slots must be a whole number from 1 to 4096");
  EXPECT_EQ(error_of([] { parse_host_list("a:x"); }),
            "--hosts: 'a:x': slots must be a whole number from 1 to 4096");
  EXPECT_EQ(error_of([] { parse_host_list("a:"); }), "--hosts: 'a:': expected a number after ':'");
  EXPECT_EQ(error_of([] { parse_host_list("fd00::1:2"); }),
            "--hosts: 'fd00::1:2': write an IPv6 address in brackets, [addr]:SLOTS");
  EXPECT_EQ(error_of([] { parse_host_list("a;rm -rf"); }),
            "--hosts: 'a;rm -rf' is not a host name");
}

TEST(HostList, ReadsMpirunsHostfileFormat) {
  std::vector<HostSlots> hosts = parse_hostfile(
      "# the cluster\n"
      "\n"
      "node01 slots=4   # the fast one\n"
      "  node02 slots=4 max_slots=8\n"
      "node03\n"
      "\t\n",
      "hosts.txt");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(describe_hosts(hosts), "node01:4, node02:4, node03:1");
}

TEST(HostList, RefusesAMalformedHostfileNamingTheLine) {
  EXPECT_EQ(error_of([] { parse_hostfile("a slots=2\nb slots=two\n", "hf"); }),
            "hf line 2: slots must be a whole number from 1 to 4096, got 'slots=two'");
  EXPECT_EQ(error_of([] { parse_hostfile("a cpus=2\n", "hf"); }),
            "hf line 1: unknown 'cpus=2' (weftrun reads 'slots=N' and 'max_slots=N')");
  EXPECT_EQ(error_of([] { parse_hostfile("a slots=2 slots=3\n", "hf"); }),
            "hf line 1: slots given twice");
  EXPECT_EQ(error_of([] { parse_hostfile("# nothing\n\n", "hf"); }), "hf lists no host");
  EXPECT_EQ(error_of([] { read_hostfile("/nonexistent/hostfile"); }),
            "--hostfile: cannot read '/nonexistent/hostfile'");
}

TEST(RankPlacement, FillsEachHostsSlotsInOrder) {
  std::vector<HostSlots> hosts = parse_host_list("a:2,b:2,c:2");
  EXPECT_EQ(placed(hosts, 0), "a,b,c x2") << "every slot when -np is not given";
  EXPECT_EQ(placed(hosts, 4), "a,b x2") << "c stays idle, as with mpirun -np 4";
  EXPECT_EQ(placed(hosts, 2), "a x2");
  EXPECT_EQ(placed(hosts, 6), "a,b,c x2");
}

TEST(RankPlacement, MoreRanksThanSlotsNeedOversubscribe) {
  std::vector<HostSlots> hosts = parse_host_list("a:2,b:2");
  EXPECT_EQ(error_of([&] { placed(hosts, 6); }),
            "-np 6 is more than the 4 slots of the hosts a:2, b:2; give fewer ranks, more "
            "slots, or --oversubscribe");
  EXPECT_EQ(placed(hosts, 6, 0, true), "a,b x3") << "spread evenly when oversubscribing";
  EXPECT_EQ(error_of([&] { placed(hosts, 5, 0, true); }),
            "-np 5 with --oversubscribe does not divide evenly over the 2 hosts");
}

TEST(RankPlacement, RefusesAnUnevenPlacementWithItsNumbers) {
  EXPECT_EQ(error_of([] { placed(parse_host_list("a:2,b:2"), 3); }),
            "-np 3 puts 2, 1 ranks on the hosts a:2, b:2 (filling each host's slots in order); "
            "weftrun runs the same number of ranks on every host it uses: choose -np or the "
            "slots so that they match");
  EXPECT_EQ(error_of([] { placed(parse_host_list("a:4,b:2"), 0); }),
            "one rank per slot puts 4, 2 ranks on the hosts a:4, b:2 (filling each host's slots "
            "in order); weftrun runs the same number of ranks on every host it uses: choose -np "
            "or the slots so that they match");
  EXPECT_EQ(placed(parse_host_list("a:4,b:2"), 4), "a x4") << "fits on the first host";
}

TEST(RankPlacement, PerHostCountRunsOnEveryHostOrTheFirstFew) {
  std::vector<HostSlots> hosts = parse_host_list("a:4,b:4,c:4");
  EXPECT_EQ(placed(hosts, 0, 2), "a,b,c x2");
  EXPECT_EQ(placed(hosts, 8, 4), "a,b x4") << "-np 8 -n 4: the first two hosts";
  EXPECT_EQ(error_of([&] { placed(hosts, 16, 4); }),
            "-np 16 with --nproc-per-node 4 needs 4 hosts, and 3 are listed");
  EXPECT_EQ(error_of([&] { placed(hosts, 6, 4); }),
            "-np 6 with --nproc-per-node 4 needs a multiple of the per-host count");
  EXPECT_EQ(error_of([&] { placed(hosts, 0, 5); }),
            "--nproc-per-node 5 is more than the 4 slots of host a; give it more slots, or add "
            "--oversubscribe");
  EXPECT_EQ(placed(hosts, 0, 5, true), "a,b,c x5");
}

TEST(NodeCommand, QuotesEveryWordForTheRemoteShell) {
  EXPECT_EQ(shell_quote("plain/path-1.2_x=y"), "plain/path-1.2_x=y");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("two words"), "'two words'");
  EXPECT_EQ(shell_quote("it's $HOME; `x`"), "'it'\\''s $HOME; `x`'");
}

TEST(NodeCommand, StartsEachNodesWeftrunInTheSameDirectoryWithTheToken) {
  LaunchOptions options;
  options.node_hosts = {"a", "b"};
  options.nnodes = 2;
  options.nproc_per_node = 3;
  options.time_limit_text = "5m";
  options.command = {"./prog", "--its flag"};
  NodeJob job;
  job.weftrun_path = "/opt/weft/bin/weftrun";
  job.working_dir = "/home/me/my job";
  job.master_addr = "a";
  job.master_port = 29500;
  job.job_token = "0123abcd";
  const char* inherited[] = {"PATH=/bin",          "WEFT_SOCKET_IFNAME=eth0", "WEFT_STORE_ADDR=x:1",
                             "WEFT_JOB_TOKEN=old", "OMP_NUM_THREADS=4",       nullptr};
  job.environment =
      node_environment(inherited, {"OMP_NUM_THREADS", "FOO=bar baz", "UNSET"}, job.job_token);
  EXPECT_EQ(job.environment,
            (std::vector<std::string>{"WEFT_SOCKET_IFNAME=eth0", "OMP_NUM_THREADS=4", "FOO=bar baz",
                                      "WEFT_JOB_TOKEN=0123abcd"}));

  std::string line = remote_shell_line(job, node_weftrun_argv(options, job, 1));
  EXPECT_EQ(line,
            "cd '/home/me/my job' && exec env WEFT_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=4 "
            "'FOO=bar baz' WEFT_JOB_TOKEN=0123abcd /opt/weft/bin/weftrun --nnodes 2 --node-rank 1 "
            "--nproc-per-node 3 --master-addr a --master-port 29500 --join-timeout 300 --bind "
            "spread --node-host b --stop-on-stdin-close --timeout 5m -- ./prog '--its flag'");
  EXPECT_EQ(remote_shell_argv("ssh  -p 2222 -o BatchMode=yes", "b", line),
            (std::vector<std::string>{"ssh", "-p", "2222", "-o", "BatchMode=yes", "b", line}));
}

}  // namespace
}  // namespace weft::run
