// WEFT_SOCKET_IFNAME's NCCL syntax end to end: two ranks as threads rendezvous and all_reduce
// over TCP on the interface the variable chooses; a value matching nothing fails init clearly.
#include <gtest/gtest.h>
#include <ifaddrs.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "support/errors.h"
#include "support/thread_ranks.h"
#include "util/socket.h"

namespace weft {
namespace {

using testing::error_of;
using testing::run_ranks;

// Sets WEFT_SOCKET_IFNAME (and WEFT_TRANSPORT=tcp, so that no byte goes through shared memory)
// while it lives.
class SocketIfname {
 public:
  explicit SocketIfname(const std::string& value) {
    setenv("WEFT_SOCKET_IFNAME", value.c_str(), 1);
    setenv("WEFT_TRANSPORT", "tcp", 1);
  }
  ~SocketIfname() {
    unsetenv("WEFT_SOCKET_IFNAME");
    unsetenv("WEFT_TRANSPORT");
  }
};

// This host's interfaces with an IPv4 address, in the kernel's order.
std::vector<std::string> ipv4_interfaces() {
  std::vector<std::string> names;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return names;
  for (ifaddrs* it = list; it; it = it->ifa_next) {
    if (it->ifa_addr && it->ifa_addr->sa_family == AF_INET &&
        std::find(names.begin(), names.end(), it->ifa_name) == names.end()) {
      names.emplace_back(it->ifa_name);
    }
  }
  freeifaddrs(list);
  return names;
}

void all_reduce_over_two_ranks() {
  run_ranks(2, [](ProcessGroup& group) {
    std::vector<float> data(1000, static_cast<float>(group.rank() + 1));
    group.all_reduce(data);
    for (float value : data) ASSERT_EQ(value, 3.0f);
  });
}

TEST(SocketIfname, LoopbackByPrefixExactNameAndExclusion) {
  std::string all_but_lo = "^=";
  for (const std::string& name : ipv4_interfaces()) {
    if (name != "lo") all_but_lo += name + ",";
  }
  all_but_lo += "no-such-if0";
  for (const std::string& value : {std::string("lo"), std::string("=lo"), std::string(" lo , "),
                                   std::string("no-such-if,lo"), all_but_lo}) {
    SCOPED_TRACE("WEFT_SOCKET_IFNAME='" + value + "'");
    SocketIfname ifname(value);
    EXPECT_TRUE(util::interface_address(value).is_loopback());
    all_reduce_over_two_ranks();
  }
}

TEST(SocketIfname, ExcludingLoopbackChoosesAnotherInterface) {
  std::vector<std::string> names = ipv4_interfaces();
  auto other = std::find_if(names.begin(), names.end(),
                            [](const std::string& name) { return name != "lo"; });
  if (other == names.end()) GTEST_SKIP() << "no interface but lo has an IPv4 address";
  SocketIfname ifname("^lo");
  util::SocketAddress address = util::interface_address("^lo");
  EXPECT_FALSE(address.is_loopback()) << address.to_string();
  all_reduce_over_two_ranks();
}

TEST(SocketIfname, NoMatchNamesVariableValueAndInterfaces) {
  SocketIfname ifname("=l,no-such-if0");
  Error error = error_of([] {
    InitOptions options;
    options.rank = 0;
    options.world_size = 1;
    options.store = std::make_shared<MemoryStore>();
    init_process_group(options);
  });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  std::string message = error.what();
  EXPECT_NE(message.find("WEFT_SOCKET_IFNAME='=l,no-such-if0'"), std::string::npos) << message;
  EXPECT_NE(message.find("(interfaces: lo"), std::string::npos) << message;
}

TEST(SocketIfname, AValueWithNoEntryIsAnError) {
  SocketIfname ifname(" ^ ");
  Error error = error_of([] { util::interface_address(" ^ "); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("WEFT_SOCKET_IFNAME=' ^ '"), std::string::npos)
      << error.what();
}

}  // namespace
}  // namespace weft
