// WEFT_SOCKET_CONGESTION (transport/tcp/congestion_control.h): the choice, as a function of the
// setting, the system's default and what the kernel refuses; then against this kernel, on the
// connections two TCP ranks make on loopback.
#include "transport/tcp/congestion_control.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "support/tcp_rank.h"
#include "transport/request.h"
#include "weft/error.h"

namespace weft::transport {
namespace {

using namespace std::chrono_literals;

// A kernel that refuses the names in `refused` (EPERM, as for a name not in
// tcp_allowed_congestion_control) and accepts every other one.
auto kernel_refusing(std::set<std::string> refused) {
  return [refused](const std::string& name) { return refused.contains(name) ? EPERM : 0; };
}

TEST(CongestionControl, AutoKeepsADefaultThatDoesNotPace) {
  EXPECT_EQ(choose_congestion_control("auto", "cubic", kernel_refusing({})), "");
  EXPECT_EQ(choose_congestion_control("", "reno", kernel_refusing({})), "");
  EXPECT_EQ(choose_congestion_control("auto", "dctcp", kernel_refusing({})), "");
}

TEST(CongestionControl, AutoReplacesAPacingDefaultByReno) {
  EXPECT_EQ(choose_congestion_control("auto", "bbr", kernel_refusing({})), "reno");
  EXPECT_EQ(choose_congestion_control("", "bbr2", kernel_refusing({})), "reno");
  EXPECT_EQ(choose_congestion_control("auto", "bbr", kernel_refusing({"cubic"})), "reno");
  // Refused after all (a kernel built without it): the system's stays, and no error, since the
  // user asked for nothing.
  EXPECT_EQ(choose_congestion_control("auto", "bbr", kernel_refusing({"reno"})), "");
}

TEST(CongestionControl, SystemKeepsEvenAPacingDefault) {
  EXPECT_EQ(choose_congestion_control("system", "bbr", kernel_refusing({})), "");
}

TEST(CongestionControl, ANamedOneIsUsedUnlessItIsTheDefaultAlready) {
  EXPECT_EQ(choose_congestion_control("reno", "bbr", kernel_refusing({})), "reno");
  EXPECT_EQ(choose_congestion_control("bbr", "cubic", kernel_refusing({})), "bbr");
  EXPECT_EQ(choose_congestion_control("cubic", "cubic", kernel_refusing({})), "");
}

TEST(CongestionControl, ANamedOneTheKernelRefusesIsAnErrorNamingTheSettingAndWhy) {
  try {
    choose_congestion_control("cubic", "bbr", kernel_refusing({"cubic"}));
    FAIL() << "a refused name was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    std::string what = e.what();
    EXPECT_NE(what.find("WEFT_SOCKET_CONGESTION=cubic"), std::string::npos) << what;
    EXPECT_NE(what.find("refuses"), std::string::npos) << what;
    EXPECT_NE(what.find("allowed:"), std::string::npos) << what;
  }
}

TEST(CongestionControl, ThisKernelRefusesANameItDoesNotKnow) {
  EXPECT_THROW(resolve_congestion_control("no-such-congestion-control"), Error);
}

// Every TCP socket of this process connected from or to `port` on loopback, by descriptor.
std::vector<int> sockets_on_port(int port) {
  std::vector<int> found;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return found;
  while (dirent* entry = readdir(dir)) {
    int fd = std::atoi(entry->d_name);
    if (fd <= 2 || fd == dirfd(dir)) continue;
    sockaddr_storage mine{};
    sockaddr_storage theirs{};
    socklen_t mine_length = sizeof mine;
    socklen_t theirs_length = sizeof theirs;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &mine_length) != 0) continue;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&theirs), &theirs_length) != 0) continue;
    if (mine.ss_family != AF_INET) continue;
    auto port_of = [](const sockaddr_storage& address) {
      return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
    };
    if (port_of(mine) == port || port_of(theirs) == port) found.push_back(fd);
  }
  closedir(dir);
  return found;
}

std::unique_ptr<testing::TcpRank> rank_using(int rank, const std::string& congestion) {
  TcpPathOptions options;
  options.rank = rank;
  options.world_size = 2;
  options.job_token = "congestion-control-test";
  options.listen_address = util::resolve("127.0.0.1", 0);
  options.handshake_timeout = 10s;
  options.congestion_control = congestion;
  return std::make_unique<testing::TcpRank>(rank, options, nullptr);
}

// A send or receive of `buffer` with rank `peer`, on one context and tag.
RequestPtr request(Request::Kind kind, int peer, std::vector<char>& buffer) {
  return std::make_shared<Request>(kind, peer, 1, 7, Signature{}, buffer.data(), buffer.size());
}

TEST(CongestionControl, ConnectionsBetweenRanksUseTheChosenOneBothWays) {
  // Reno is built into every kernel and every process may choose it.
  const std::string chosen = resolve_congestion_control("reno");
  if (chosen.empty()) GTEST_SKIP() << "reno is this kernel's default: nothing to change";
  auto rank0 = rank_using(0, chosen);
  auto rank1 = rank_using(1, chosen);
  rank0->set_peer_addresses({rank0->listen_address(), rank1->listen_address()});
  rank1->set_peer_addresses({rank0->listen_address(), rank1->listen_address()});
  // Each rank sends first, so that each dials a connection of its own.
  std::vector<char> to1(32, 'a'), at1(32), to0(32, 'b'), at0(32);
  auto send01 = request(Request::Kind::kSend, 1, to1);
  auto send10 = request(Request::Kind::kSend, 0, to0);
  rank0->post_send(send01);
  rank1->post_send(send10);
  auto recv1 = request(Request::Kind::kRecv, 0, at1);
  auto recv0 = request(Request::Kind::kRecv, 1, at0);
  rank1->post_recv(recv1);
  rank0->post_recv(recv0);
  for (const RequestPtr& request : {send01, send10, recv1, recv0}) {
    ASSERT_TRUE(testing::finishes_within(request, 15s));
    ASSERT_FALSE(request->failed()) << request->error()->what();
  }
  EXPECT_EQ(at1, to1);
  EXPECT_EQ(at0, to0);

  int checked = 0;
  for (const util::SocketAddress& listener : {rank0->listen_address(), rank1->listen_address()}) {
    for (int fd : sockets_on_port(listener.port())) {
      EXPECT_EQ(congestion_control_of(fd), "reno")
          << "socket " << fd << " on port " << listener.port();
      ++checked;
    }
  }
  // Each dialled connection shows up twice: its dialling end and its accepted end.
  EXPECT_GE(checked, 2);
}

}  // namespace
}  // namespace weft::transport
