// Every Store implementation against the same contract, and the TCP server against strangers.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <thread>

#include "store/store_protocol.h"
#include "support/descriptors_taken.h"
#include "support/errors.h"
#include "support/store_server_process.h"
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

// As ranks that are threads of one process do: each one's init sets the timeout of the store
// they share while the others call it (a data race ThreadSanitizer reported before the timeout
// was atomic).
TEST_P(StoreContract, TheTimeoutMayBeSetWhileOtherThreadsCallTheStore) {
  constexpr int kThreads = 4, kRounds = 50;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int j = 0; j < kRounds; ++j) {
        store_->set_timeout(std::chrono::milliseconds(5000 + i));
        store_->set("key" + std::to_string(i), to_bytes(std::to_string(j)));
        EXPECT_EQ(to_string(store_->get("key" + std::to_string(i))), std::to_string(j));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_GE(store_->timeout(), 5000ms);
  EXPECT_LT(store_->timeout(), std::chrono::milliseconds(5000 + kThreads));
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
  // Replaces the server with one of these options.
  void restart(const TcpStoreServer::Options& options) {
    server_.reset();
    server_ = std::make_unique<TcpStoreServer>(options);
  }
  // Waits up to `within` for the server to count `count` clients; false if it does not.
  bool clients_become(int count, std::chrono::milliseconds within) {
    auto until = std::chrono::steady_clock::now() + within;
    while (server_->num_clients() != count) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(5ms);
    }
    return true;
  }
  util::Fd raw_connection() {
    util::Fd fd = util::connect_with_deadline(util::resolve("127.0.0.1", server_->port()),
                                              std::chrono::steady_clock::now() + 5s);
    EXPECT_TRUE(fd.valid());
    return fd;
  }
  // Reads a reply frame; returns its status byte, or -1 when the server closed instead.
  int read_status(int fd) {
    std::vector<uint8_t> body;
    return read_reply(fd, body);
  }
  // Reads a reply frame into body (status byte first); returns its status, or -1 when the
  // server closed instead.
  int read_reply(int fd, std::vector<uint8_t>& body) {
    uint32_t length = 0;
    try {
      util::read_exact(fd, &length, 4, std::chrono::steady_clock::now() + 5s);
      body.resize(length);
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

std::vector<uint8_t> add_request(const std::string& key, int64_t delta) {
  std::vector<uint8_t> body{static_cast<uint8_t>(store::Command::kAdd)};
  util::ByteWriter out(body);
  out.put_string(key);
  out.put<int64_t>(delta);
  return store::frame(body);
}

std::vector<uint8_t> ping_request() {
  return store::frame({static_cast<uint8_t>(store::Command::kPing)});
}

std::vector<uint8_t> concatenated(const std::vector<std::vector<uint8_t>>& frames) {
  std::vector<uint8_t> bytes;
  for (const auto& f : frames) bytes.insert(bytes.end(), f.begin(), f.end());
  return bytes;
}

void send_all(int fd, const std::vector<std::vector<uint8_t>>& frames) {
  std::vector<uint8_t> bytes = concatenated(frames);
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

TEST_F(TcpStoreServerRobustness, LargeRepliesToPipelinedRequestsAllArrive) {
  // Replies over the output limit pause the client's requests until the socket takes them;
  // then the rest must be served, even though no more requests arrive to prompt it.
  {
    TcpStore client("127.0.0.1", server_->port(), 5000ms);
    client.set("big", Bytes(512 * 1024, 7));
  }
  util::Fd fd = raw_connection();
  send_all(fd.get(), std::vector<std::vector<uint8_t>>(20, get_request("big", 5000)));
  int answered = 0;
  for (int i = 0; i < 20; ++i) answered += read_status(fd.get()) == 0 ? 1 : 0;
  EXPECT_EQ(answered, 20);
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

// The process's descriptors taken up to a soft limit of 256, but one, which a client's
// connection to the server then takes: it waits in the listener's backlog, and the server has
// none to accept it with. The destructor gives them back.
class DescriptorsTakenUp {
 public:
  explicit DescriptorsTakenUp(int port) : taken_(/*spare=*/1) {
    client_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    EXPECT_TRUE(client_.valid());
    auto address = util::resolve("127.0.0.1", port);
    EXPECT_EQ(::connect(client_.get(), address.raw(), address.length), 0);
  }
  void give_back() { taken_.give_back(); }
  int client() const { return client_.get(); }

 private:
  testing::DescriptorsTaken taken_;
  util::Fd client_;
};

TEST_F(TcpStoreServerRobustness, RunningOutOfDescriptorsDoesNotSpinTheServer) {
  DescriptorsTakenUp exhausted(server_->port());
  ASSERT_FALSE(::testing::Test::HasFailure());
  std::this_thread::sleep_for(50ms);
  auto before = cpu_time();
  std::this_thread::sleep_for(500ms);
  auto used = cpu_time() - before;
  exhausted.give_back();
  EXPECT_LT(used, 100ms) << "the server spun on a listener it could not accept from";
  // Accepted once descriptors are back: the waiting client is answered.
  std::vector<uint8_t> ping{1, 0, 0, 0, static_cast<uint8_t>(store::Command::kPing)};
  util::write_all(exhausted.client(), ping.data(), ping.size());
  EXPECT_EQ(read_status(exhausted.client()), 0);
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

// --- the TCP server's limits: clients, buffers, stalls, fairness -----------------------------

// Counts the bytes a connection receives, on a thread of its own, until the connection is shut
// down (by the destructor at the latest).
class ReplyCounter {
 public:
  explicit ReplyCounter(int fd)
      : fd_(fd), thread_([this] {
          std::vector<uint8_t> chunk(256 * 1024);
          for (;;) {
            ssize_t n = ::recv(fd_, chunk.data(), chunk.size(), 0);
            if (n > 0) {
              bytes.fetch_add(static_cast<uint64_t>(n));
            } else if (n == 0 || errno != EINTR) {
              return;
            }
          }
        }) {}
  ~ReplyCounter() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
  }
  std::atomic<uint64_t> bytes{0};

 private:
  int fd_;
  std::thread thread_;
};

// Whether the server closes this connection before the deadline (what it sent is skipped).
bool closed_by_server(int fd, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd ready{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&ready, 1, static_cast<int>(left.count())) == 0) return false;
    uint8_t chunk[64 * 1024];
    ssize_t n = ::recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
}

// Reply bytes: a ping's, and a get's of a one-byte value.
constexpr uint64_t kPingReplyBytes = 5;
constexpr uint64_t kOneByteGetReplyBytes = 10;

// Records the lines logged while it lives.
class LogCapture {
 public:
  LogCapture() : level_(log_level()) {
    set_log_level(LogLevel::kWarn);
    set_log_sink([this](LogLevel level, std::string_view subsystem, std::string_view line) {
      std::lock_guard lock(mutex_);
      if (level == LogLevel::kWarn && subsystem == "store") warnings_.emplace_back(line);
    });
  }
  ~LogCapture() {
    set_log_sink(nullptr);
    set_log_level(level_);
  }
  int count(const std::string& text) {
    std::lock_guard lock(mutex_);
    int lines = 0;
    for (const std::string& line : warnings_) lines += line.find(text) != std::string::npos;
    return lines;
  }
  bool warned(const std::string& a, const std::string& b) {
    std::lock_guard lock(mutex_);
    for (const std::string& line : warnings_) {
      if (line.find(a) != std::string::npos && line.find(b) != std::string::npos) return true;
    }
    return false;
  }

 private:
  LogLevel level_;
  std::mutex mutex_;
  std::vector<std::string> warnings_;
};

TEST_F(TcpStoreServerRobustness, RunningOutOfDescriptorsIsLoggedOnceNotAtEveryPause) {
  LogCapture log;
  DescriptorsTakenUp exhausted(server_->port());
  ASSERT_FALSE(::testing::Test::HasFailure());
  // Ten of the listener's 100 ms pauses.
  std::this_thread::sleep_for(1s);
  exhausted.give_back();
  expect_server_still_serves();
  EXPECT_EQ(log.count("cannot accept a connection"), 1);
}

TEST_F(TcpStoreServerRobustness, ConnectionsBeyondTheCapAreRefusedAndTheOthersKeepWorking) {
  LogCapture log;
  TcpStoreServer::Options options;
  options.max_clients = 8;
  restart(options);
  std::vector<std::unique_ptr<TcpStore>> clients;
  for (int i = 0; i < 8; ++i) {
    clients.push_back(std::make_unique<TcpStore>("127.0.0.1", server_->port(), 5000ms));
    clients.back()->set("k" + std::to_string(i), to_bytes(std::to_string(i)));
  }
  EXPECT_EQ(server_->num_clients(), 8);
  // The ninth is told at once, not left to time out.
  auto start = std::chrono::steady_clock::now();
  Error error = error_of([&] { TcpStore extra("127.0.0.1", server_->port(), 5000ms); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(error.code(), ErrorCode::kSystem) << error.what();
  EXPECT_NE(std::string(error.what()).find("limit of 8 clients"), std::string::npos)
      << error.what();
  // So is a stranger speaking no protocol: an error reply, then the connection closes.
  util::Fd stranger = raw_connection();
  EXPECT_EQ(read_status(stranger.get()), 2);
  EXPECT_EQ(read_status(stranger.get()), -1);
  EXPECT_TRUE(log.warned("refused a connection", "WEFT_STORE_MAX_CLIENTS"));
  // Those connected are still served, and a place freed can be taken again.
  for (int i = 0; i < 8; ++i) {
    std::string other = std::to_string((i + 1) % 8);
    EXPECT_EQ(to_string(clients[i]->get("k" + other)), other);
  }
  EXPECT_EQ(server_->num_clients(), 8);
  clients.pop_back();
  EXPECT_TRUE(clients_become(7, 2000ms));
  TcpStore again("127.0.0.1", server_->port(), 5000ms);
  EXPECT_EQ(to_string(again.get("k0")), "0");
}

// Sets an environment variable for its own life.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

TEST_F(TcpStoreServerRobustness, TheCapAndTheStallTimeoutComeFromTheEnvironment) {
  {
    ScopedEnv cap("WEFT_STORE_MAX_CLIENTS", "1");
    ScopedEnv stall("WEFT_STORE_STALL_TIMEOUT", "200ms");
    restart(TcpStoreServer::Options{});
    util::Fd silent = raw_connection();
    EXPECT_THROW(TcpStore("127.0.0.1", server_->port(), 5000ms), Error);
    EXPECT_TRUE(clients_become(0, 3000ms)) << "the silent connection outlived the stall timeout";
    TcpStore client("127.0.0.1", server_->port(), 5000ms);  // its place is free again
  }
  ScopedEnv malformed("WEFT_STORE_MAX_CLIENTS", "lots");
  Error error = error_of([] { TcpStoreServer server; });
  EXPECT_NE(std::string(error.what()).find("WEFT_STORE_MAX_CLIENTS"), std::string::npos)
      << error.what();
}

TEST_F(TcpStoreServerRobustness, StalledConnectionsAreClosedButIdleAndParkedClientsStay) {
  TcpStoreServer::Options options;
  options.max_frame_bytes = 1 << 20;
  options.stall_timeout = 300ms;
  restart(options);
  TcpStore idle("127.0.0.1", server_->port(), 5000ms);  // a rank between two store calls
  idle.set("k", to_bytes("v"));
  util::Fd waiter = raw_connection();  // a rank parked in a long get
  send_all(waiter.get(), {get_request("late", 20'000)});
  // A client that sends a request slowly, a byte every 50 ms: it makes progress, so it stays.
  util::Fd slow = raw_connection();
  send_all(slow.get(), {ping_request()});
  std::vector<uint8_t> slow_set = set_request("slow", "x");
  std::thread trickle([&] {
    for (uint8_t byte : slow_set) {
      util::write_all(slow.get(), &byte, 1);
      std::this_thread::sleep_for(50ms);
    }
  });
  // 200 connections stop mid-request (half of them after a whole first one, in the same
  // write), 20 never send one.
  auto start = std::chrono::steady_clock::now();
  std::vector<util::Fd> stalled;
  for (int i = 0; i < 200; ++i) {
    stalled.push_back(raw_connection());
    std::vector<uint8_t> partial{100, 0, 0, 0, 1, 2, 3};
    if (i % 2 == 1) partial.insert(partial.begin(), {1, 0, 0, 0, 11});  // a ping first
    util::write_all(stalled.back().get(), partial.data(), partial.size());
  }
  for (int i = 0; i < 20; ++i) stalled.push_back(raw_connection());
  int closed = 0;
  for (util::Fd& fd : stalled) closed += closed_by_server(fd.get(), start + 5s) ? 1 : 0;
  EXPECT_EQ(closed, 220);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
  EXPECT_TRUE(clients_become(3, 2000ms)) << server_->num_clients() << " clients left";
  trickle.join();
  EXPECT_EQ(read_status(slow.get()), 0);  // the ping
  EXPECT_EQ(read_status(slow.get()), 0);  // the trickled set
  // Idle for more than twice the stall timeout, the idle client and the waiter are still here.
  EXPECT_EQ(server_->num_clients(), 3);
  EXPECT_EQ(to_string(idle.get("slow")), "x");
  idle.set("late", to_bytes("now"));
  EXPECT_EQ(read_status(waiter.get()), 0);
}

TEST_F(TcpStoreServerRobustness, AClientThatLeavesItsRepliesUnreadIsClosedAfterTheStallTimeout) {
  TcpStoreServer::Options options;
  options.max_frame_bytes = 1 << 20;
  options.stall_timeout = 300ms;
  restart(options);
  TcpStore other("127.0.0.1", server_->port(), 5000ms);
  other.set("big", Bytes(512 * 1024, 7));
  util::Fd hog = raw_connection();
  send_all(hog.get(), std::vector<std::vector<uint8_t>>(100, get_request("big", 5000)));
  // Reading to see the close would be reading the replies: the server's count tells instead.
  ASSERT_TRUE(clients_become(2, 2000ms));
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(clients_become(1, 5000ms)) << "the client that reads nothing was not closed";
  EXPECT_GE(std::chrono::steady_clock::now() - start, 250ms);
  EXPECT_EQ(other.get("big").size(), 512u * 1024);
}

TEST_F(TcpStoreServerRobustness, RequestsSentWithoutReadingAreHeldBackNotBuffered) {
  // The default frame limit of 64 MiB: a client whose get is parked sends 48 MiB of sets
  // behind it. The server must not read them all into memory, and must not drop the client
  // either: once the get is answered, every set is.
  restart(TcpStoreServer::Options{});
  constexpr int kSets = 768;
  std::vector<uint8_t> body{static_cast<uint8_t>(store::Command::kSet)};
  util::ByteWriter out(body);
  out.put_string("k");
  out.put_blob(Bytes(64 * 1024, 1));
  std::vector<std::vector<uint8_t>> frames{get_request("gate", 20'000)};
  frames.insert(frames.end(), kSets, store::frame(body));
  std::vector<uint8_t> bytes = concatenated(frames);
  frames.clear();
  util::Fd hog = raw_connection();
  auto before = resident_bytes();
  std::thread writer([&] { util::write_all(hog.get(), bytes.data(), bytes.size()); });
  std::this_thread::sleep_for(500ms);
  EXPECT_LT(resident_bytes(), before + (16u << 20)) << "the server buffered what it cannot serve";
  {
    TcpStore client("127.0.0.1", server_->port(), 5000ms);
    client.set("gate", to_bytes("1"));
  }
  EXPECT_EQ(read_status(hog.get()), 0);  // the get
  int answered = 0;
  for (int i = 0; i < kSets; ++i) answered += read_status(hog.get()) == 0 ? 1 : 0;
  EXPECT_EQ(answered, kSets);
  writer.join();
}

// 200,000 pings (1 MB) pipelined behind a parked get, so that they are all buffered when the
// get is answered.
std::vector<uint8_t> gated_pings(int count) {
  std::vector<std::vector<uint8_t>> frames{get_request("gate", 20'000)};
  frames.insert(frames.end(), count, ping_request());
  return concatenated(frames);
}

TEST_F(TcpStoreServerRobustness, ManySmallPipelinedRequestsAreServedInLinearTime) {
  // 400,000 pings (2 MB) pipelined behind a parked get, all served once it is answered. That
  // must cost what they are: erasing the front of the buffer per request moved a megabyte per
  // ping here (400 GB in all, tens of seconds).
  restart(TcpStoreServer::Options{});  // frames up to 64 MiB: none of this is refused
  constexpr int kPings = 400'000;
  std::vector<uint8_t> bytes = gated_pings(kPings);
  util::Fd fd = raw_connection();
  ReplyCounter replies(fd.get());
  // On a thread: a server that holds pipelined requests back blocks this write until the gate.
  std::thread writer([&] { util::write_all(fd.get(), bytes.data(), bytes.size()); });
  std::this_thread::sleep_for(100ms);
  TcpStore client("127.0.0.1", server_->port(), 5000ms);
  auto start = std::chrono::steady_clock::now();
  client.set("gate", to_bytes("1"));
  const uint64_t expected = kOneByteGetReplyBytes + kPingReplyBytes * kPings;
  while (replies.bytes.load() < expected && std::chrono::steady_clock::now() - start < 5s) {
    std::this_thread::sleep_for(5ms);
  }
  writer.join();
  EXPECT_EQ(replies.bytes.load(), expected);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST_F(TcpStoreServerRobustness, AClientFloodingRequestsDoesNotStarveTheOthers) {
  // Two clients each have 50,000 adds to a counter buffered behind a parked get. A third
  // client opens their gate and, in the same write, asks for the counter. Served fairly, its
  // request waits for a share of each flood (one turn's), not for all of it: the counter it
  // reads says how many adds ran before it, whatever the timing.
  constexpr int kFlooders = 2, kAdds = 50'000;
  std::vector<std::vector<uint8_t>> frames{get_request("gate", 20'000)};
  frames.insert(frames.end(), kAdds, add_request("c", 1));
  std::vector<uint8_t> gated = concatenated(frames);  // 900 KB; replies 650 KB, never read
  std::vector<util::Fd> flooders;
  for (int i = 0; i < kFlooders; ++i) {
    flooders.push_back(raw_connection());
    util::write_all(flooders.back().get(), gated.data(), gated.size());
  }
  std::this_thread::sleep_for(100ms);  // both gets parked, the adds buffered
  util::Fd fd = raw_connection();
  send_all(fd.get(), {set_request("gate", "1"), add_request("c", 0)});
  std::vector<uint8_t> reply;
  EXPECT_EQ(read_reply(fd.get(), reply), 0);
  ASSERT_EQ(read_reply(fd.get(), reply), 0);
  ASSERT_EQ(reply.size(), 9u);
  int64_t before_mine;
  std::memcpy(&before_mine, reply.data() + 1, sizeof before_mine);
  EXPECT_LT(before_mine, kAdds / 10) << "the adds that ran before the third client's request";
  // The floods are served in full all the same.
  int64_t total = 0;
  auto start = std::chrono::steady_clock::now();
  while (total < kFlooders * kAdds && std::chrono::steady_clock::now() - start < 5s) {
    send_all(fd.get(), {add_request("c", 0)});
    if (read_reply(fd.get(), reply) != 0 || reply.size() != 9) break;
    std::memcpy(&total, reply.data() + 1, sizeof total);
    if (total < kFlooders * kAdds) std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(total, kFlooders * kAdds);
}

TEST_F(TcpStoreServerRobustness, CallsStayPromptWhileOtherClientsFlood) {
  // Two clients each have 200,000 pings buffered when their gate opens, and keep sending more;
  // a third client's calls meanwhile must wait for a share of the flood, not for all of it.
  constexpr int kFlooders = 2;
  std::vector<uint8_t> gated = gated_pings(200'000);
  std::vector<uint8_t> more =
      concatenated(std::vector<std::vector<uint8_t>>(10'000, ping_request()));
  TcpStore normal("127.0.0.1", server_->port(), 5000ms);
  std::vector<util::Fd> fds;
  std::vector<std::unique_ptr<ReplyCounter>> replies;
  for (int i = 0; i < kFlooders; ++i) {
    fds.push_back(raw_connection());
    replies.push_back(std::make_unique<ReplyCounter>(fds.back().get()));
    util::write_all(fds.back().get(), gated.data(), gated.size());
  }
  std::this_thread::sleep_for(100ms);  // both gets parked, the pings buffered
  auto replied = [&] {
    uint64_t sum = 0;
    for (auto& counter : replies) sum += counter->bytes.load();
    return sum;
  };
  auto since = [](std::chrono::steady_clock::time_point start) {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                                 start);
  };
  // Stops the flood however the test ends: shutting the connections down ends the writers.
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  struct StopFlood {
    std::atomic<bool>& stop;
    std::vector<std::unique_ptr<ReplyCounter>>& replies;
    std::vector<std::thread>& writers;
    ~StopFlood() {
      stop.store(true);
      replies.clear();
      for (auto& writer : writers) writer.join();
    }
  } stop_flood{stop, replies, writers};
  auto start = std::chrono::steady_clock::now();
  normal.set("gate", to_bytes("1"));
  auto opening = since(start);
  for (auto& fd : fds) {
    writers.emplace_back([&, raw = fd.get()] {
      try {
        while (!stop.load()) util::write_all(raw, more.data(), more.size());
      } catch (const Error&) {
      }
    });
  }
  // The flood is flowing (its replies arrive) before the calls are timed.
  while (replied() < kOneByteGetReplyBytes * kFlooders + 1000 * kPingReplyBytes &&
         std::chrono::steady_clock::now() - start < 5s) {
    std::this_thread::sleep_for(1ms);
  }
  bool flowing = replied() >= kOneByteGetReplyBytes * kFlooders + 1000 * kPingReplyBytes;
  std::vector<std::chrono::microseconds> latencies;
  for (int i = 0; i < 20; ++i) {
    auto call = std::chrono::steady_clock::now();
    normal.add("n", 1);
    latencies.push_back(since(call));
  }
  EXPECT_TRUE(flowing) << "the flooders were not served";
  std::sort(latencies.begin(), latencies.end());
  std::string seen = "opening the gate " + std::to_string(opening.count()) + " us; calls (us):";
  for (auto latency : latencies) seen += " " + std::to_string(latency.count());
  EXPECT_LT(opening, 1s) << seen;
  EXPECT_LT(latencies[latencies.size() / 2], 50ms) << seen;
  EXPECT_LT(latencies.back(), 1s) << seen;
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

// A file that another user could have left in a shared /tmp: FileStore must not use it.
TEST(FileStoreFile, AFileOthersMayWriteIsRefusedAndLeftAlone) {
  std::string path = testing::unique_temp_path("filestore_open_to_all");
  ::unlink(path.c_str());
  util::Fd made(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  ASSERT_TRUE(made.valid());
  ASSERT_EQ(::fchmod(made.get(), 0666), 0);
  Error error = error_of([&] { FileStore store(path); });
  EXPECT_EQ(error.code(), ErrorCode::kUnauthorized) << error.what();
  EXPECT_NE(error.message().find("may be written by other users"), std::string::npos)
      << error.message();
  EXPECT_NE(error.message().find("0666"), std::string::npos) << error.message();
  struct stat info {};
  ASSERT_EQ(::fstat(made.get(), &info), 0);
  EXPECT_EQ(info.st_size, 0) << "FileStore wrote into a file it refused";
  ::unlink(path.c_str());
}

TEST(FileStoreFile, AFileOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root can make a file another user owns";
  std::string path = testing::unique_temp_path("filestore_other_owner");
  ::unlink(path.c_str());
  util::Fd made(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  ASSERT_TRUE(made.valid());
  ASSERT_EQ(::fchown(made.get(), 65534, 65534), 0);  // nobody
  Error error = error_of([&] { FileStore store(path); });
  EXPECT_EQ(error.code(), ErrorCode::kUnauthorized) << error.what();
  EXPECT_NE(error.message().find("belongs to another user"), std::string::npos) << error.message();
  ::unlink(path.c_str());
}

TEST(FileStoreFile, ASymbolicLinkIsNotFollowed) {
  std::string target = testing::unique_temp_path("filestore_link_target");
  std::string link = testing::unique_temp_path("filestore_link");
  ::unlink(target.c_str());
  ::unlink(link.c_str());
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  Error error = error_of([&] { FileStore store(link); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << error.what();
  EXPECT_NE(error.message().find("symbolic link"), std::string::npos) << error.message();
  EXPECT_NE(::access(target.c_str(), F_OK), 0) << "the link's target was created";
  ::unlink(link.c_str());
}

TEST(FileStoreFile, ANewFileIsTheUsersAlone) {
  std::string path = testing::unique_temp_path("filestore_new");
  ::unlink(path.c_str());
  ::mode_t old_mask = ::umask(0);
  {
    FileStore store(path);
    ::umask(old_mask);
    struct stat info {};
    ASSERT_EQ(::stat(path.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 07777, 0600u);
    EXPECT_EQ(info.st_uid, ::geteuid());
    store.set("k", to_bytes("v"));
    EXPECT_EQ(to_string(FileStore(path).get("k")), "v");  // a second user of the same file
  }
  ::umask(old_mask);
}

TEST(TcpStoreClient, AServerThatStopsReadingIsATimeout) {
  // A server that answers the client's first request, then reads nothing more: a large set
  // fills both socket buffers. The write must give up at the store's timeout, not hang.
  util::Fd listener = util::listen_on(util::resolve("127.0.0.1", 0), false);
  int port = util::local_address_of(listener.get()).port();
  util::Fd accepted;
  std::thread server([&] {
    pollfd ready{listener.get(), POLLIN, 0};
    if (::poll(&ready, 1, 5000) != 1) return;
    accepted.reset(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    try {
      uint8_t hello[5];
      util::read_exact(accepted.get(), hello, sizeof hello, std::chrono::steady_clock::now() + 5s);
      uint8_t ok[5] = {1, 0, 0, 0, static_cast<uint8_t>(store::Status::kOk)};
      util::write_all(accepted.get(), ok, sizeof ok);
    } catch (const Error& e) {
      ADD_FAILURE() << "the client's first request: " << e.what();
    }
  });
  TcpStore store("127.0.0.1", port, 500ms);
  server.join();
  auto start = std::chrono::steady_clock::now();
  Error error = error_of([&] { store.set("k", Bytes(64u << 20, 1)); });
  EXPECT_EQ(error.code(), ErrorCode::kTimeout) << error.what();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(TcpStoreClient, ACallToAStoppedServerEndsSoonAndTheNextCallGetsItsOwnAnswer) {
  testing::StoreServerProcess server;
  TcpStore store("127.0.0.1", server.port(), 5000ms);
  store.set_timeout(300ms);
  EXPECT_EQ(store.add("n", 1), 1);
  server.stop();
  auto start = std::chrono::steady_clock::now();
  Error error = error_of([&] { store.add("n", 1); });
  EXPECT_EQ(error.code(), ErrorCode::kTimeout) << error.what();
  // Its timeout, then as long again for the answer to travel.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
  server.resume();
  // The add that timed out may still be served (and answered on its connection, n = 2) or
  // not (n = 1): either way, that answer must not be taken for a later call's.
  EXPECT_EQ(store.add("m", 5), 5);
  const int64_t n = store.add("n", 0);
  EXPECT_TRUE(n == 1 || n == 2) << n;
  EXPECT_EQ(store.add("n", 1), n + 1);
}

TEST(TcpStoreClient, ThreadsDoNotWaitBehindEachOthersWaitsAndOneThreadKeepsOneConnection) {
  TcpStoreServer::Options options;
  options.host = "127.0.0.1";
  TcpStoreServer server(options);
  TcpStore store("127.0.0.1", server.port(), 5000ms);
  for (int i = 0; i < 20; ++i) store.add("n", 1);
  EXPECT_EQ(server.num_clients(), 1);
  std::thread waiter([&] { store.wait({"ready"}, 3000ms); });
  std::this_thread::sleep_for(100ms);
  // A window's setup on one thread waits for keys that another group's setup, on another
  // thread of the same rank, must write: behind that wait, they never would be.
  auto start = std::chrono::steady_clock::now();
  store.set("ready", to_bytes("1"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1000ms);
  waiter.join();
  EXPECT_EQ(store.add("n", 1), 21);
  EXPECT_EQ(server.num_clients(), 2);
}

TEST(TcpStoreClient, AListenerThatNeverAnswersIsATimeoutAtConnect) {
  // A listener that never accepts: the connection completes in its backlog, but no store
  // answers there, and the client says so when it connects rather than at its first call.
  util::Fd listener = util::listen_on(util::resolve("127.0.0.1", 0), false);
  int port = util::local_address_of(listener.get()).port();
  auto start = std::chrono::steady_clock::now();
  Error error = error_of([&] { TcpStore store("127.0.0.1", port, 300ms); });
  EXPECT_EQ(error.code(), ErrorCode::kTimeout) << error.what();
  EXPECT_NE(std::string(error.what()).find(std::to_string(port)), std::string::npos)
      << error.what();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
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
