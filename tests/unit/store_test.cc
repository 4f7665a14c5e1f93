// Every Store implementation against the same contract, and the TCP server against strangers.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "store/store_protocol.h"
#include "support/errors.h"
#include "support/temp_paths.h"
#include "util/socket.h"
#include "weft/weft.h"

namespace weft {
namespace {

using namespace std::chrono_literals;
using testing::error_of;

struct StoreUnderTest {
  std::string name;
  std::function<std::shared_ptr<Store>()> make;
};

class StoreContract : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string& kind = GetParam();
    if (kind == "memory") {
      store_ = std::make_shared<MemoryStore>();
    } else if (kind == "prefix") {
      store_ = std::make_shared<PrefixStore>("group7", std::make_shared<MemoryStore>());
    } else if (kind == "file") {
      path_ = testing::unique_temp_path("store_test");
      ::unlink(path_.c_str());
      store_ = std::make_shared<FileStore>(path_);
    } else {
      server_ = std::make_unique<TcpStoreServer>();
      store_ = std::make_shared<TcpStore>("127.0.0.1", server_->port(), 5000ms);
    }
  }
  void TearDown() override {
    store_.reset();
    if (!path_.empty()) {
      EXPECT_NE(::access(path_.c_str(), F_OK), 0) << "the FileStore left its file behind";
    }
  }
  std::shared_ptr<Store> another_client() {
    if (server_) return std::make_shared<TcpStore>("127.0.0.1", server_->port(), 5000ms);
    if (!path_.empty()) return std::make_shared<FileStore>(path_);
    return store_;
  }

  std::shared_ptr<Store> store_;
  std::unique_ptr<TcpStoreServer> server_;
  std::string path_;
};

TEST_P(StoreContract, SetGetCheckDelete) {
  store_->set("a", to_bytes("1"));
  EXPECT_EQ(to_string(store_->get("a")), "1");
  EXPECT_TRUE(store_->check({"a"}));
  EXPECT_FALSE(store_->check({"a", "b"}));
  store_->set("a", to_bytes("2"));
  EXPECT_EQ(to_string(store_->get("a")), "2");
  EXPECT_TRUE(store_->delete_key("a"));
  EXPECT_FALSE(store_->delete_key("a"));
  EXPECT_FALSE(store_->check({"a"}));
  store_->set("empty", {});
  EXPECT_TRUE(store_->get("empty").empty());
}

TEST_P(StoreContract, AddKeepsDecimalCounters) {
  EXPECT_EQ(store_->add("n", 5), 5);
  EXPECT_EQ(store_->add("n", -2), 3);
  EXPECT_EQ(to_string(store_->get("n")), "3");
  store_->set("text", to_bytes("abc"));
  EXPECT_THROW(store_->add("text", 1), Error);
}

TEST_P(StoreContract, CompareSetFollowsTorch) {
  EXPECT_EQ(to_string(store_->compare_set("k", to_bytes("x"), to_bytes("y"))), "x");
  EXPECT_FALSE(store_->check({"k"}));
  EXPECT_EQ(to_string(store_->compare_set("k", {}, to_bytes("first"))), "first");
  EXPECT_EQ(to_string(store_->compare_set("k", to_bytes("nope"), to_bytes("z"))), "first");
  EXPECT_EQ(to_string(store_->compare_set("k", to_bytes("first"), to_bytes("second"))), "second");
}

TEST_P(StoreContract, MultiSetAndMultiGet) {
  store_->multi_set({"x", "y"}, {to_bytes("1"), to_bytes("2")});
  auto values = store_->multi_get({"y", "x"});
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(to_string(values[0]), "2");
  EXPECT_EQ(to_string(values[1]), "1");
  EXPECT_THROW(store_->multi_set({"x"}, {}), Error);
}

TEST_P(StoreContract, NumKeysCountsKeys) {
  int64_t before = store_->num_keys();
  store_->set("one", to_bytes("1"));
  store_->set("two", to_bytes("2"));
  EXPECT_EQ(store_->num_keys(), before + 2);
}

TEST_P(StoreContract, GetWaitsForAKeySetLater) {
  auto other = another_client();
  std::thread setter([&] {
    std::this_thread::sleep_for(100ms);
    other->set("late", to_bytes("here"));
  });
  EXPECT_EQ(to_string(store_->get("late")), "here");
  setter.join();
}

TEST_P(StoreContract, WaitTimesOutNamingTheMissingKey) {
  store_->set("present", to_bytes("1"));
  auto started = std::chrono::steady_clock::now();
  Error error = error_of([&] { store_->wait({"present", "absent"}, 200ms); });
  EXPECT_EQ(error.code(), ErrorCode::kTimeout);
  EXPECT_NE(std::string(error.what()).find("absent"), std::string::npos) << error.what();
  EXPECT_EQ(std::string(error.what()).find("'present'"), std::string::npos) << error.what();
  auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_GE(waited, 190ms);
  EXPECT_LT(waited, 3s);
  store_->set_timeout(150ms);
  EXPECT_THROW(store_->get("absent"), Error);
}

TEST_P(StoreContract, ConcurrentClientsCountExactly) {
  constexpr int kClients = 8, kAdds = 50;
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&] {
      auto client = another_client();
      for (int j = 0; j < kAdds; ++j) client->add("counter", 1);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(store_->add("counter", 0), kClients * kAdds);
}

INSTANTIATE_TEST_SUITE_P(AllStores, StoreContract,
                         ::testing::Values("memory", "prefix", "file", "tcp"),
                         [](const auto& info) { return info.param; });

TEST(PrefixStore, KeysLiveUnderThePrefix) {
  auto base = std::make_shared<MemoryStore>();
  PrefixStore a("a", base), b("b", base);
  a.set("k", to_bytes("1"));
  b.set("k", to_bytes("2"));
  EXPECT_EQ(to_string(base->get("a/k")), "1");
  EXPECT_EQ(to_string(base->get("b/k")), "2");
}

// --- the TCP server against strangers --------------------------------------------------------

class TcpStoreServerRobustness : public ::testing::Test {
 protected:
  void SetUp() override {
    TcpStoreServer::Options options;
    options.max_frame_bytes = 1 << 20;
    server_ = std::make_unique<TcpStoreServer>(options);
  }
  util::Fd raw_connection() {
    util::Fd fd = util::connect_with_deadline(util::resolve("127.0.0.1", server_->port()),
                                              std::chrono::steady_clock::now() + 5s);
    EXPECT_TRUE(fd.valid());
    return fd;
  }
  // Reads a reply frame; returns its status byte, or -1 when the server closed instead.
  int read_status(int fd) {
    uint32_t length = 0;
    try {
      util::read_exact(fd, &length, 4, std::chrono::steady_clock::now() + 5s);
      std::vector<uint8_t> body(length);
      util::read_exact(fd, body.data(), length, std::chrono::steady_clock::now() + 5s);
      return body.empty() ? -2 : body[0];
    } catch (const Error&) {
      return -1;
    }
  }
  void expect_server_still_serves() {
    TcpStore client("127.0.0.1", server_->port(), 5000ms);
    client.set("alive", to_bytes("yes"));
    EXPECT_EQ(to_string(client.get("alive")), "yes");
  }
  std::unique_ptr<TcpStoreServer> server_;
};

TEST_F(TcpStoreServerRobustness, AnOversizedFrameIsRefusedWithoutAllocatingIt) {
  util::Fd fd = raw_connection();
  uint32_t huge = 0xFFFFFFF0u;
  util::write_all(fd.get(), &huge, sizeof huge);
  EXPECT_EQ(read_status(fd.get()), 2);  // kError, then the server closes
  expect_server_still_serves();
}

TEST_F(TcpStoreServerRobustness, MalformedRequestsGetAnErrorAndTheConnectionStaysUsable) {
  util::Fd fd = raw_connection();
  // Unknown command 0x7f.
  std::vector<uint8_t> frame{1, 0, 0, 0, 0x7f};
  util::write_all(fd.get(), frame.data(), frame.size());
  EXPECT_EQ(read_status(fd.get()), 2);
  // A set whose key length runs past the frame.
  std::vector<uint8_t> truncated{5, 0, 0, 0, 1, 0xff, 0xff, 0, 0};
  util::write_all(fd.get(), truncated.data(), truncated.size());
  EXPECT_EQ(read_status(fd.get()), 2);
  // A check announcing four billion keys in a tiny frame.
  std::vector<uint8_t> many{5, 0, 0, 0, 6, 0xff, 0xff, 0xff, 0xff};
  util::write_all(fd.get(), many.data(), many.size());
  EXPECT_EQ(read_status(fd.get()), 2);
  // The same connection still answers a ping.
  std::vector<uint8_t> ping{1, 0, 0, 0, 11};
  util::write_all(fd.get(), ping.data(), ping.size());
  EXPECT_EQ(read_status(fd.get()), 0);
  expect_server_still_serves();
}

std::vector<uint8_t> get_request(const std::string& key, uint64_t timeout_ms) {
  std::vector<uint8_t> body{static_cast<uint8_t>(store::Command::kGet)};
  util::ByteWriter out(body);
  out.put_string(key);
  out.put<uint64_t>(timeout_ms);
  return store::frame(body);
}

std::vector<uint8_t> set_request(const std::string& key, const std::string& value) {
  std::vector<uint8_t> body{static_cast<uint8_t>(store::Command::kSet)};
  util::ByteWriter out(body);
  out.put_string(key);
  out.put_blob(to_bytes(value));
  return store::frame(body);
}

void send_all(int fd, const std::vector<std::vector<uint8_t>>& frames) {
  std::vector<uint8_t> bytes;
  for (const auto& f : frames) bytes.insert(bytes.end(), f.begin(), f.end());
  util::write_all(fd, bytes.data(), bytes.size());
}

TEST_F(TcpStoreServerRobustness, PipelinedRequestsResumedByAWakeDoNotCrashTheServer) {
  // All wait for "a". When it appears, resuming `setter` runs its pipelined set of "b", which
  // wakes waiters again from inside the first wake; the others are resumed there and park anew
  // on "z", and the first wake must not resume them a second time (it answered "z", absent,
  // and crashed the server). Others connect before and after the setter, so that some come
  // after it in whatever order the server visits its clients.
  std::vector<util::Fd> others;
  for (int i = 0; i < 3; ++i) others.push_back(raw_connection());
  util::Fd setter = raw_connection();
  for (int i = 0; i < 3; ++i) others.push_back(raw_connection());
  send_all(setter.get(), {get_request("a", 5000), set_request("b", "1"), get_request("c", 5000)});
  for (auto& other : others) {
    send_all(other.get(), {get_request("a", 5000), get_request("z", 5000)});
  }
  std::this_thread::sleep_for(100ms);  // every request parked
  {
    TcpStore client("127.0.0.1", server_->port(), 5000ms);
    client.set("a", to_bytes("x"));
  }
  EXPECT_EQ(read_status(setter.get()), 0);                            // get "a"
  for (auto& other : others) EXPECT_EQ(read_status(other.get()), 0);  // get "a"
  expect_server_still_serves();
  {
    TcpStore client("127.0.0.1", server_->port(), 5000ms);
    client.set("z", to_bytes("y"));
    client.set("c", to_bytes("w"));
  }
  for (auto& other : others) EXPECT_EQ(read_status(other.get()), 0);  // get "z"
  EXPECT_EQ(read_status(setter.get()), 0);                            // get "c"
}

std::size_t resident_bytes() {
  long pages = 0, resident = 0;
  FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return 0;
  if (std::fscanf(statm, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(statm);
  return static_cast<std::size_t>(resident) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

TEST_F(TcpStoreServerRobustness, AReplyIsBoundedLikeARequest) {
  {
    TcpStore client("127.0.0.1", server_->port(), 5000ms);
    client.set("big", Bytes(512 * 1024, 7));
  }
  // A multi_get of about 20 KB naming the 512 KiB key 3,000 times: 1.5 GiB of reply.
  std::vector<uint8_t> body{static_cast<uint8_t>(store::Command::kMultiGet)};
  util::ByteWriter out(body);
  store::write_keys(out, std::vector<std::string>(3000, "big"));
  out.put<uint64_t>(5000);
  auto before = resident_bytes();
  util::Fd fd = raw_connection();
  send_all(fd.get(), {store::frame(body)});
  EXPECT_EQ(read_status(fd.get()), 2);  // kError: over the limit, nothing built
  EXPECT_LT(resident_bytes(), before + (64u << 20));
  expect_server_still_serves();
}

TEST_F(TcpStoreServerRobustness, RepliesToAClientThatDoesNotReadAreBounded) {
  {
    TcpStore client("127.0.0.1", server_->port(), 5000ms);
    client.set("big", Bytes(512 * 1024, 7));
  }
  auto before = resident_bytes();
  util::Fd hog = raw_connection();
  std::vector<std::vector<uint8_t>> gets(3000, get_request("big", 5000));
  send_all(hog.get(), gets);  // 3,000 gets never read: 1.5 GiB of replies
  std::this_thread::sleep_for(300ms);
  EXPECT_LT(resident_bytes(), before + (64u << 20));
  expect_server_still_serves();  // and others are served meanwhile
}

std::chrono::microseconds cpu_time() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto us = [](const timeval& t) {
    return std::chrono::seconds(t.tv_sec) + std::chrono::microseconds(t.tv_usec);
  };
  return std::chrono::duration_cast<std::chrono::microseconds>(us(usage.ru_utime) +
                                                               us(usage.ru_stime));
}

TEST_F(TcpStoreServerRobustness, RunningOutOfDescriptorsDoesNotSpinTheServer) {
  rlimit old_limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old_limit), 0);
  rlimit low = old_limit;
  low.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  // Take every descriptor left, then give one to a client: its connection waits in the
  // listener's backlog, and the server has none to accept it with.
  std::vector<util::Fd> filler;
  for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) filler.emplace_back(fd);
  ASSERT_FALSE(filler.empty());
  filler.pop_back();
  util::Fd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(client.valid());
  auto address = util::resolve("127.0.0.1", server_->port());
  ASSERT_EQ(::connect(client.get(), address.raw(), address.length), 0);
  std::this_thread::sleep_for(50ms);
  auto before = cpu_time();
  std::this_thread::sleep_for(500ms);
  auto used = cpu_time() - before;
  filler.clear();
  setrlimit(RLIMIT_NOFILE, &old_limit);
  EXPECT_LT(used, 100ms) << "the server spun on a listener it could not accept from";
  // Accepted once descriptors are back: the waiting client is answered.
  std::vector<uint8_t> ping{1, 0, 0, 0, static_cast<uint8_t>(store::Command::kPing)};
  util::write_all(client.get(), ping.data(), ping.size());
  EXPECT_EQ(read_status(client.get()), 0);
  expect_server_still_serves();
}

TEST_F(TcpStoreServerRobustness, ATruncatedFrameAndAVanishingClientHarmNobody) {
  {
    util::Fd fd = raw_connection();
    std::vector<uint8_t> partial{100, 0, 0, 0, 1, 2, 3};
    util::write_all(fd.get(), partial.data(), partial.size());
  }  // closed mid-frame
  {
    util::Fd fd = raw_connection();
    std::vector<uint8_t> garbage(4096, 0xAB);
    ::send(fd.get(), garbage.data(), garbage.size(), MSG_NOSIGNAL);
  }
  expect_server_still_serves();
  for (int i = 0; i < 100 && server_->num_clients() > 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(server_->num_clients(), 0);
}

TEST_F(TcpStoreServerRobustness, ManyClientsAtOnce) {
  constexpr int kClients = 32;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      TcpStore client("127.0.0.1", server_->port(), 5000ms);
      client.set("k" + std::to_string(i), to_bytes(std::to_string(i)));
      // Everybody waits for everybody: the server parks 32 requests at once.
      std::vector<std::string> all;
      for (int j = 0; j < kClients; ++j) all.push_back("k" + std::to_string(j));
      auto values = client.multi_get(all);
      if (to_string(values[kClients - 1]) == std::to_string(kClients - 1)) ok.fetch_add(1);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), kClients);
}

TEST(FileStoreLocking, AFileLockedByAnotherProcessIsATimeout) {
  std::string path = testing::unique_temp_path("filestore_locked");
  ::unlink(path.c_str());
  FileStore store(path);
  store.set_timeout(300ms);
  // Another open file description, as another process would hold: flock excludes the store's.
  util::Fd holder(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(holder.valid());
  ASSERT_EQ(::flock(holder.get(), LOCK_EX), 0);
  auto start = std::chrono::steady_clock::now();
  Error error = error_of([&] { store.set("k", to_bytes("v")); });
  EXPECT_EQ(error.code(), ErrorCode::kTimeout) << error.what();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  ::flock(holder.get(), LOCK_UN);
  store.set("k", to_bytes("v"));
  EXPECT_EQ(to_string(store.get("k")), "v");
  ::unlink(path.c_str());
}

TEST(TcpStoreClient, AServerThatStopsReadingIsATimeout) {
  // A listener that never accepts: the connection completes in its backlog, and a large set
  // fills both socket buffers. The write must give up at the store's timeout, not hang.
  util::Fd listener = util::listen_on(util::resolve("127.0.0.1", 0), false);
  int port = util::local_address_of(listener.get()).port();
  TcpStore store("127.0.0.1", port, 500ms);
  auto start = std::chrono::steady_clock::now();
  Error error = error_of([&] { store.set("k", Bytes(64u << 20, 1)); });
  EXPECT_EQ(error.code(), ErrorCode::kTimeout) << error.what();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(TcpStoreClient, NoServerIsATimeoutNamingTheAddress) {
  int port;
  {
    util::Fd probe = util::listen_on(util::resolve("127.0.0.1", 0), false);
    port = util::local_address_of(probe.get()).port();
  }
  Error error = error_of([&] { TcpStore store("127.0.0.1", port, 300ms); });
  EXPECT_EQ(error.code(), ErrorCode::kTimeout);
  EXPECT_NE(std::string(error.what()).find(std::to_string(port)), std::string::npos)
      << error.what();
}

}  // namespace
}  // namespace weft
