// util::Acceptor, the accept loop the TCP path and the store server share: every waiting
// connection taken, a taker's failure costing that connection only, and a shortage of
// descriptors pausing the listener (not spinning on it) until it has passed.
#include "util/acceptor.h"

#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/descriptors_taken.h"
#include "util/socket.h"

namespace weft::util {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kAcceptorTestListener = 7;

class AcceptorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(epoll_.valid());
    listener_ = listen_on(resolve("127.0.0.1", 0), /*non_blocking=*/true);
    port_ = local_address_of(listener_.get()).port();
    acceptor_.add(listener_.get(), epoll_data_t{.u64 = kAcceptorTestListener});
  }

  Fd connect_client() {
    Fd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    EXPECT_TRUE(client.valid());
    SocketAddress address = resolve("127.0.0.1", port_);
    EXPECT_EQ(::connect(client.get(), address.raw(), address.length), 0);
    return client;
  }

  // Whether epoll reports the listener within `wait`.
  bool listener_ready(std::chrono::milliseconds wait) {
    epoll_event event{};
    int count = epoll_wait(epoll_.get(), &event, 1, static_cast<int>(wait.count()));
    return count == 1 && event.data.u64 == kAcceptorTestListener;
  }

  std::vector<Fd> taken_;
  std::function<void(Fd, const SocketAddress&)> keep_ = [this](Fd fd, const SocketAddress& from) {
    EXPECT_EQ(from.host(), "127.0.0.1");
    taken_.push_back(std::move(fd));
  };
  Fd epoll_{epoll_create1(EPOLL_CLOEXEC)};
  Acceptor acceptor_{epoll_.get(), Subsys::kTransport, "acceptor test"};
  Fd listener_;
  int port_ = 0;
};

TEST_F(AcceptorTest, EveryWaitingConnectionIsTakenInOneCall) {
  std::vector<Fd> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(connect_client());
  ASSERT_TRUE(listener_ready(2000ms));
  acceptor_.accept_all(listener_.get(), keep_);
  EXPECT_EQ(taken_.size(), 3u);
  EXPECT_FALSE(acceptor_.paused_until());
  // Nothing left: the listener is quiet, and another call takes nothing.
  EXPECT_FALSE(listener_ready(0ms));
  acceptor_.accept_all(listener_.get(), keep_);
  EXPECT_EQ(taken_.size(), 3u);
}

TEST_F(AcceptorTest, ATakerThatThrowsLosesThatConnectionOnly) {
  Fd first = connect_client();
  Fd second = connect_client();
  ASSERT_TRUE(listener_ready(2000ms));
  int calls = 0;
  acceptor_.accept_all(listener_.get(), [&](Fd fd, const SocketAddress& from) {
    if (++calls == 1) throw std::runtime_error("no memory for it");
    keep_(std::move(fd), from);
  });
  EXPECT_EQ(calls, 2);
  ASSERT_EQ(taken_.size(), 1u);
  // The one that was dropped was closed: its client reads the end of the stream.
  char byte;
  int ended = 0;
  for (Fd* client : {&first, &second}) {
    ended += ::recv(client->get(), &byte, 1, MSG_DONTWAIT) == 0;
  }
  EXPECT_EQ(ended, 1);
}

TEST_F(AcceptorTest, OutOfDescriptorsTheListenerPausesAndThenTakesTheConnection) {
  Fd client = connect_client();
  testing::DescriptorsTaken exhausted;
  ASSERT_TRUE(listener_ready(2000ms));
  auto before = std::chrono::steady_clock::now();
  acceptor_.accept_all(listener_.get(), keep_);
  EXPECT_TRUE(taken_.empty());
  ASSERT_TRUE(acceptor_.paused_until());
  EXPECT_GE(*acceptor_.paused_until(), before + Acceptor::kPause);
  // Still queued, but not reported: a loop does not spin on it. Too early to resume.
  EXPECT_FALSE(listener_ready(20ms));
  acceptor_.resume_when_due();
  EXPECT_TRUE(acceptor_.paused_until());
  exhausted.give_back();
  std::this_thread::sleep_until(*acceptor_.paused_until() + 1ms);
  acceptor_.resume_when_due();
  EXPECT_FALSE(acceptor_.paused_until());
  ASSERT_TRUE(listener_ready(2000ms));
  acceptor_.accept_all(listener_.get(), keep_);
  EXPECT_EQ(taken_.size(), 1u);
}

}  // namespace
}  // namespace weft::util
