// Init and shutdown: IPv6, interface choice, explicit init methods, and nothing left behind.
#include <dirent.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "support/errors.h"
#include "support/free_port.h"
#include "support/temp_paths.h"
#include "support/thread_ranks.h"
#include "util/socket.h"

namespace weft {
namespace {

using testing::error_of;
using testing::free_port;
using testing::run_ranks;

int count_entries(const char* directory) {
  int count = 0;
  if (DIR* dir = opendir(directory)) {
    while (readdir(dir)) ++count;
    closedir(dir);
  }
  return count;
}

// Two ranks as threads rendezvous through `init_method` and exchange one message each way.
void exchange_through(const std::string& init_method) {
  std::vector<std::string> failures(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        InitOptions options;
        options.init_method = init_method;
        options.rank = rank;
        options.world_size = 2;
        options.timeout = std::chrono::seconds(20);
        auto group = init_process_group(options);
        std::vector<int64_t> out{rank + 40}, in{-1};
        auto receive = group->irecv(in, 1 - rank);
        group->send(out, 1 - rank);
        receive->wait();
        if (in[0] != 41 - rank) failures[rank] = "wrong value " + std::to_string(in[0]);
      } catch (const std::exception& e) {
        failures[rank] = e.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures[0], "");
  EXPECT_EQ(failures[1], "");
}

TEST(Lifecycle, TcpInitOverIPv6) {
  exchange_through("tcp://[::1]:" + std::to_string(free_port("::1")));
}

TEST(Lifecycle, TcpInitOverIPv4) {
  exchange_through("tcp://127.0.0.1:" + std::to_string(free_port("127.0.0.1")));
}

TEST(Lifecycle, FileInitRemovesItsFile) {
  std::string path = testing::unique_temp_path("lifecycle");
  exchange_through("file://" + path);
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "the store file was left behind";
}

TEST(Lifecycle, ShutdownLeavesNoThreadOrSocketBehind) {
  exchange_through("tcp://127.0.0.1:" + std::to_string(free_port("127.0.0.1")));  // warm up
  int fds = count_entries("/proc/self/fd");
  int threads = count_entries("/proc/self/task");
  exchange_through("tcp://127.0.0.1:" + std::to_string(free_port("127.0.0.1")));
  run_ranks(3, [](ProcessGroup& group) {
    std::vector<float> data(100, 1.0f);
    group.all_reduce(data);
    group.iall_reduce(data)->wait();  // starts the group's worker thread
  });
  EXPECT_EQ(count_entries("/proc/self/fd"), fds);
  EXPECT_EQ(count_entries("/proc/self/task"), threads);
}

TEST(Lifecycle, SocketInterfaceIsHonoured) {
  setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  exchange_through("tcp://127.0.0.1:" + std::to_string(free_port("127.0.0.1")));
  setenv("WEFT_SOCKET_IFNAME", "no-such-if0", 1);
  Error error = error_of([] {
    InitOptions options;
    options.rank = 0;
    options.world_size = 1;
    options.store = std::make_shared<MemoryStore>();
    init_process_group(options);
  });
  unsetenv("WEFT_SOCKET_IFNAME");
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("no-such-if0"), std::string::npos) << error.what();
}

// A typo in the network's numbers fails init, before the rendezvous, not the first collective.
TEST(Lifecycle, AMalformedNetworkSettingFailsInit) {
  setenv("WEFT_NET_BETA", "10Gbps", 1);
  Error error = error_of([] {
    InitOptions options;
    options.rank = 0;
    options.world_size = 2;  // nobody else comes: reaching the rendezvous would time out
    options.store = std::make_shared<MemoryStore>();
    options.timeout = std::chrono::seconds(20);
    init_process_group(options);
  });
  unsetenv("WEFT_NET_BETA");
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("WEFT_NET_BETA='10Gbps' is malformed"),
            std::string::npos)
      << error.what();
  // Well-formed numbers run, and the group carries them to the selector.
  setenv("WEFT_NET_ALPHA", "1ms", 1);
  run_ranks(2, [](ProcessGroup& group) {
    std::vector<float> data(100, 1.0f);
    group.all_reduce(data);
    EXPECT_EQ(data[0], 2.0f);
  });
  unsetenv("WEFT_NET_ALPHA");
}

TEST(Lifecycle, MissingBootstrapVariablesAreNamed) {
  unsetenv("MASTER_ADDR");
  unsetenv("WEFT_STORE_ADDR");
  Error error = error_of([] {
    InitOptions options;
    options.rank = 0;
    options.world_size = 2;
    init_process_group(options);
  });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("MASTER_ADDR"), std::string::npos) << error.what();
}

TEST(Lifecycle, ARankThatNeverArrivesIsNamedInTheRendezvousTimeout) {
  auto store = std::make_shared<MemoryStore>();
  Error error = error_of([&] {
    InitOptions options;
    options.rank = 0;
    options.world_size = 3;
    options.store = store;
    options.timeout = std::chrono::milliseconds(300);
    init_process_group(options);
  });
  EXPECT_EQ(error.code(), ErrorCode::kTimeout);
  EXPECT_NE(std::string(error.what()).find("missing: 1, 2"), std::string::npos) << error.what();
}

}  // namespace
}  // namespace weft
