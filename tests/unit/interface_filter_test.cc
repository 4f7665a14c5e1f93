#include "util/interface_filter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/errors.h"
#include "weft/error.h"

namespace weft {
namespace {

using testing::error_of;
using util::InterfaceFilter;
using Names = std::vector<std::string>;

// In the kernel's order, as getifaddrs might list them.
const Names kInterfaces{"lo", "eth0", "docker0", "eth1", "ib0", "docker1", "enp3s0"};

Names select(const char* value, const Names& interfaces = kInterfaces) {
  return InterfaceFilter::parse(value).select(interfaces);
}

TEST(InterfaceFilter, PrefixesByDefault) {
  InterfaceFilter filter = InterfaceFilter::parse("eth");
  EXPECT_FALSE(filter.exact());
  EXPECT_FALSE(filter.excludes());
  EXPECT_EQ(filter.entries(), Names{"eth"});
  EXPECT_TRUE(filter.matches("eth0"));
  EXPECT_TRUE(filter.matches("eth"));
  EXPECT_FALSE(filter.matches("et"));
  EXPECT_FALSE(filter.matches("veth0"));
  EXPECT_EQ(select("eth"), (Names{"eth0", "eth1"}));
  EXPECT_EQ(select("lo"), Names{"lo"});
}

TEST(InterfaceFilter, ListOrderComesBeforeKernelOrder) {
  EXPECT_EQ(select("ib,eth"), (Names{"ib0", "eth0", "eth1"}));
  EXPECT_EQ(select("eth,ib"), (Names{"eth0", "eth1", "ib0"}));
  EXPECT_EQ(select("eth1,eth"), (Names{"eth1", "eth0"}));  // listed once, under its first entry
  EXPECT_EQ(InterfaceFilter::parse("enp,eth").choose(kInterfaces), "enp3s0");
}

TEST(InterfaceFilter, EqualsMakesEveryEntryExact) {
  InterfaceFilter filter = InterfaceFilter::parse("=eth0,ib");
  EXPECT_TRUE(filter.exact());
  EXPECT_FALSE(filter.excludes());
  EXPECT_EQ(filter.entries(), (Names{"eth0", "ib"}));
  EXPECT_TRUE(filter.matches("eth0"));
  EXPECT_FALSE(filter.matches("eth01"));
  EXPECT_FALSE(filter.matches("ib0"));
  EXPECT_EQ(select("=eth0,ib"), Names{"eth0"});
  EXPECT_EQ(select("=eth1,eth0"), (Names{"eth1", "eth0"}));
  EXPECT_EQ(select("=lo"), Names{"lo"});
}

TEST(InterfaceFilter, CaretExcludesPrefixes) {
  InterfaceFilter filter = InterfaceFilter::parse("^docker,lo");
  EXPECT_TRUE(filter.excludes());
  EXPECT_FALSE(filter.exact());
  EXPECT_FALSE(filter.matches("docker0"));
  EXPECT_FALSE(filter.matches("lo"));
  EXPECT_TRUE(filter.matches("eth0"));
  // Exclusions keep the kernel's order.
  EXPECT_EQ(select("^docker,lo"), (Names{"eth0", "eth1", "ib0", "enp3s0"}));
  EXPECT_EQ(select("^eth"), (Names{"lo", "docker0", "ib0", "docker1", "enp3s0"}));
}

TEST(InterfaceFilter, CaretEqualsExcludesExactNames) {
  InterfaceFilter filter = InterfaceFilter::parse("^=docker0,eth");
  EXPECT_TRUE(filter.excludes());
  EXPECT_TRUE(filter.exact());
  EXPECT_EQ(filter.entries(), (Names{"docker0", "eth"}));
  EXPECT_EQ(select("^=docker0,eth"), (Names{"lo", "eth0", "eth1", "ib0", "docker1", "enp3s0"}));
  EXPECT_EQ(select("^=lo,eth0,docker0,eth1,ib0,docker1"), Names{"enp3s0"});
}

TEST(InterfaceFilter, EqualsBeforeCaretIsAnExactName) {
  // NCCL reads ^ first, then =; "=^eth0" is the exact name "^eth0", which no interface has.
  InterfaceFilter filter = InterfaceFilter::parse("=^eth0");
  EXPECT_FALSE(filter.excludes());
  EXPECT_EQ(filter.entries(), Names{"^eth0"});
  EXPECT_EQ(select("=^eth0"), Names{});
}

TEST(InterfaceFilter, EmptyEntriesAreIgnored) {
  EXPECT_EQ(InterfaceFilter::parse(",eth,,ib,").entries(), (Names{"eth", "ib"}));
  EXPECT_EQ(InterfaceFilter::parse("^,lo,").entries(), Names{"lo"});
  EXPECT_EQ(select("=,eth1,"), Names{"eth1"});
}

TEST(InterfaceFilter, WhitespaceIsIgnored) {
  InterfaceFilter filter = InterfaceFilter::parse("  ^ = docker0 ,\tlo ");
  EXPECT_TRUE(filter.excludes());
  EXPECT_TRUE(filter.exact());
  EXPECT_EQ(filter.entries(), (Names{"docker0", "lo"}));
  EXPECT_EQ(select(" eth1 , ib "), (Names{"eth1", "ib0"}));
}

TEST(InterfaceFilter, AListWithNoEntryIsAnErrorNamingTheVariable) {
  for (const char* value : {"", " ", ",", " , ,", "^", "=", "^=", " ^ = , "}) {
    Error error = error_of([&] { InterfaceFilter::parse(value); });
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << "'" << value << "'";
    EXPECT_NE(std::string(error.what()).find(std::string("WEFT_SOCKET_IFNAME='") + value + "'"),
              std::string::npos)
        << error.what();
  }
}

TEST(InterfaceFilter, NoMatchIsAnErrorNamingValueAndInterfaces) {
  for (const char* value : {"wlan", "=eth", "^lo,eth,docker,ib,enp",
                            "^=lo,eth0,eth1,ib0,"
                            "docker0,docker1,enp3s0"}) {
    InterfaceFilter filter = InterfaceFilter::parse(value);
    EXPECT_EQ(filter.select(kInterfaces), Names{}) << value;
    Error error = error_of([&] { filter.choose(kInterfaces); });
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    std::string message = error.what();
    EXPECT_NE(message.find(std::string("WEFT_SOCKET_IFNAME='") + value + "'"), std::string::npos)
        << message;
    EXPECT_NE(message.find("lo, eth0, docker0, eth1, ib0, docker1, enp3s0"), std::string::npos)
        << message;
  }
  Error error = error_of([] { InterfaceFilter::parse("eth").choose({}); });
  EXPECT_NE(std::string(error.what()).find("interfaces: none"), std::string::npos) << error.what();
}

TEST(InterfaceFilter, ChooseTakesTheFirstInChoiceOrder) {
  EXPECT_EQ(InterfaceFilter::parse("eth").choose(kInterfaces), "eth0");
  EXPECT_EQ(InterfaceFilter::parse("ib,eth").choose(kInterfaces), "ib0");
  EXPECT_EQ(InterfaceFilter::parse("^lo").choose(kInterfaces), "eth0");
  EXPECT_EQ(InterfaceFilter::parse("^=lo,eth0").choose(kInterfaces), "docker0");
}

TEST(InterfaceFilter, OtherVariableNamesAppearInErrors) {
  Error error = error_of([] { InterfaceFilter::parse("^", "NCCL_SOCKET_IFNAME"); });
  EXPECT_NE(std::string(error.what()).find("NCCL_SOCKET_IFNAME='^'"), std::string::npos)
      << error.what();
}

}  // namespace
}  // namespace weft
