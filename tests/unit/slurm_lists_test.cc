#include "api/slurm_lists.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/errors.h"
#include "weft/error.h"

namespace weft {
namespace {

using api::expand_slurm_hostlist;
using api::expand_slurm_tasks_per_node;
using testing::error_of;
using Hosts = std::vector<std::string>;

Hosts hosts_of(const char* list) { return expand_slurm_hostlist(list, "SLURM_JOB_NODELIST"); }

// The message of the error a malformed host list raises; fails the test when none is raised.
std::string hostlist_error(const char* list) {
  Error error = error_of([&] { hosts_of(list); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << list;
  std::string message = error.what();
  EXPECT_NE(message.find(std::string("SLURM_JOB_NODELIST='") + list + "'"), std::string::npos)
      << message;
  return message;
}

TEST(SlurmHostlist, SingleHosts) {
  EXPECT_EQ(hosts_of("login5"), Hosts{"login5"});
  EXPECT_EQ(hosts_of("a,b.example.org,c_1"), (Hosts{"a", "b.example.org", "c_1"}));
  EXPECT_EQ(hosts_of("127.0.0.1"), Hosts{"127.0.0.1"});
}

TEST(SlurmHostlist, RangesKeepTheirZeroPadding) {
  EXPECT_EQ(hosts_of("node[01-03]"), (Hosts{"node01", "node02", "node03"}));
  EXPECT_EQ(hosts_of("node[8-10]"), (Hosts{"node8", "node9", "node10"}));
  EXPECT_EQ(hosts_of("node[08-10]"), (Hosts{"node08", "node09", "node10"}));
  EXPECT_EQ(hosts_of("n[0098-0101]"), (Hosts{"n0098", "n0099", "n0100", "n0101"}));
  EXPECT_EQ(hosts_of("n[7]"), Hosts{"n7"});
  EXPECT_EQ(hosts_of("n[5-5]"), Hosts{"n5"});
}

TEST(SlurmHostlist, SeveralGroupsInOrder) {
  EXPECT_EQ(hosts_of("node[01-03,07],gpu-a[1-2],login5"),
            (Hosts{"node01", "node02", "node03", "node07", "gpu-a1", "gpu-a2", "login5"}));
  EXPECT_EQ(hosts_of("c[1,3,5-6]"), (Hosts{"c1", "c3", "c5", "c6"}));
  EXPECT_EQ(hosts_of("x[2],y"), (Hosts{"x2", "y"}));
}

TEST(SlurmHostlist, SuffixesAndSeveralBracketsInOneHost) {
  EXPECT_EQ(hosts_of("node[1-2]-ib"), (Hosts{"node1-ib", "node2-ib"}));
  EXPECT_EQ(hosts_of("rack[1-2]-n[01-02]"),
            (Hosts{"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"}));
}

TEST(SlurmHostlist, TheFirstHostOfARealisticList) {
  EXPECT_EQ(hosts_of("gpu-node[017-020,033],cpu[1-64]").front(), "gpu-node017");
  EXPECT_EQ(hosts_of("gpu-node[017-020,033],cpu[1-64]").size(), 5u + 64u);
}

TEST(SlurmHostlist, BadSyntaxIsAnErrorNamingTheVariable) {
  EXPECT_NE(hostlist_error("").find("empty"), std::string::npos);
  EXPECT_NE(hostlist_error("node[01-03").find("not closed"), std::string::npos);
  EXPECT_NE(hostlist_error("node01-03]").find("closes no bracket"), std::string::npos);
  EXPECT_NE(hostlist_error("node[1-[2]]").find("inside another"), std::string::npos);
  EXPECT_NE(hostlist_error("a,,b").find("empty entry"), std::string::npos);
  EXPECT_NE(hostlist_error(",a").find("empty entry"), std::string::npos);
  EXPECT_NE(hostlist_error("a,").find("empty entry"), std::string::npos);
  EXPECT_NE(hostlist_error("node[]").find("empty range"), std::string::npos);
  EXPECT_NE(hostlist_error("node[1,,2]").find("empty range"), std::string::npos);
  EXPECT_NE(hostlist_error("node[3-1]").find("backwards"), std::string::npos);
  EXPECT_NE(hostlist_error("node[a-b]").find("not a number"), std::string::npos);
  EXPECT_NE(hostlist_error("node[1-]").find("not a number"), std::string::npos);
  EXPECT_NE(hostlist_error("node[-1]").find("not a number"), std::string::npos);
  EXPECT_NE(hostlist_error("node[1-2-3]").find("not a number"), std::string::npos);
  EXPECT_NE(hostlist_error("node[1:2]").find("not a number"), std::string::npos);
  EXPECT_NE(hostlist_error("node 1").find("no host name has"), std::string::npos);
  EXPECT_NE(hostlist_error("node(1)").find("no host name has"), std::string::npos);
  EXPECT_NE(hostlist_error("n[1234567890]").find("digits"), std::string::npos);
}

TEST(SlurmHostlist, AHugeExpansionIsRefusedNotAllocated) {
  EXPECT_NE(hostlist_error("n[0-999999999]").find("more than"), std::string::npos);
  EXPECT_NE(hostlist_error("a[0-2047]b[0-1023]").find("more than"), std::string::npos);
}

TEST(SlurmTasksPerNode, CountsAndRepeats) {
  auto tasks = [](const char* list) {
    return expand_slurm_tasks_per_node(list, "SLURM_TASKS_PER_NODE");
  };
  EXPECT_EQ(tasks("4"), std::vector<int>{4});
  EXPECT_EQ(tasks("2(x3),1"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(tasks("1,2(x2),3"), (std::vector<int>{1, 2, 2, 3}));
  EXPECT_EQ(tasks("16(x1)"), std::vector<int>{16});
}

TEST(SlurmTasksPerNode, BadSyntaxIsAnErrorNamingTheVariable) {
  for (const char* bad : {"", "x", "2(x)", "2(3)", "2(x3", "2x3)", "2(x0)", "-1", "2,,1", "2(x3)1",
                          "2 (x3)", "(x3)", "1234567890"}) {
    Error error = error_of([&] { expand_slurm_tasks_per_node(bad, "SLURM_TASKS_PER_NODE"); });
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(std::string(error.what()).find(std::string("SLURM_TASKS_PER_NODE='") + bad + "'"),
              std::string::npos)
        << error.what();
  }
  Error error =
      error_of([&] { expand_slurm_tasks_per_node("1(x999999999)", "SLURM_TASKS_PER_NODE"); });
  EXPECT_NE(std::string(error.what()).find("more than"), std::string::npos) << error.what();
}

}  // namespace
}  // namespace weft
