// The TCP store with a job token (store/store_auth.h): the client and the server prove to each
// other that they know it before any request is served; the token never crosses the wire;
// strangers, impostors and replays get nothing. Without a token the store stays open.
#include "store/store_auth.h"

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "store/store_protocol.h"
#include "support/wire_tap.h"
#include "util/hmac.h"
#include "weft/error.h"
#include "weft/tcp_store.h"
#include "weft/tcp_store_server.h"

namespace weft {
namespace {

using namespace std::chrono_literals;
using testing::Bytes8;
using testing::contains;
using testing::read_for;
using testing::send_bytes;
using testing::WireTap;

const std::string kToken = "store-token-0123456789abcdef";
const std::string kSecretValue = "VALUE-only-for-the-job";

std::unique_ptr<TcpStoreServer> server_with_token(const std::string& token) {
  TcpStoreServer::Options options;
  options.host = "127.0.0.1";
  options.job_token = token;
  options.stall_timeout = 3s;
  return std::make_unique<TcpStoreServer>(options);
}

util::SocketAddress address_of(const TcpStoreServer& server) {
  return util::resolve("127.0.0.1", server.port());
}

Bytes8 get_request(const std::string& key) {
  std::vector<uint8_t> body{static_cast<uint8_t>(store::Command::kGet)};
  util::ByteWriter out(body);
  out.put_string(key);
  out.put<uint64_t>(1000);
  return store::frame(body);
}

// A command byte and 32 bytes (a nonce or a digest): the authentication's requests.
Bytes8 auth_request(store::Command command, const std::array<uint8_t, 32>& bytes) {
  Bytes8 body(1 + bytes.size());
  body[0] = static_cast<uint8_t>(command);
  std::memcpy(body.data() + 1, bytes.data(), bytes.size());
  return store::frame(body);
}

// The code of the error connecting with `token` gives; nullopt when it connects.
std::optional<ErrorCode> code_of_connecting(const TcpStoreServer& server,
                                            const std::string& token) {
  try {
    TcpStore client("127.0.0.1", server.port(), 5s, token);
  } catch (const Error& e) {
    return e.code();
  }
  return std::nullopt;
}

TEST(StoreAuth, AClientWithTheTokenIsServedAndTheTokenNeverCrossesTheWire) {
  auto server = server_with_token(kToken);
  WireTap tap(address_of(*server));
  TcpStore client("127.0.0.1", tap.address().port(), 5s, kToken);
  client.set("key", to_bytes(kSecretValue));
  EXPECT_EQ(to_string(client.get("key")), kSecretValue);
  EXPECT_TRUE(contains(tap.from_target(), kSecretValue));
  EXPECT_FALSE(contains(tap.to_target(), kToken));
  EXPECT_FALSE(contains(tap.from_target(), kToken));
}

TEST(StoreAuth, ARawClientThatDoesNotAuthenticateGetsNoDataAndIsClosed) {
  auto server = server_with_token(kToken);
  TcpStore("127.0.0.1", server->port(), 5s, kToken).set("key", to_bytes(kSecretValue));
  // Announcing a large request: neither buffered nor answered (not even with the limit).
  Bytes8 large(4 + 100, 'x');
  uint32_t announced = 1u << 20;
  std::memcpy(large.data(), &announced, sizeof announced);
  for (const Bytes8& request :
       {get_request("key"), store::frame({static_cast<uint8_t>(store::Command::kPing)}), large}) {
    util::Fd stranger = testing::connect_to(address_of(*server));
    ASSERT_TRUE(stranger.valid());
    send_bytes(stranger.get(), request);
    bool closed = false;
    Bytes8 answer = read_for(stranger.get(), 1 << 16, 5s, &closed);
    EXPECT_TRUE(closed) << "the server kept an unauthenticated connection open";
    EXPECT_TRUE(answer.empty()) << "the server answered an unauthenticated request";
  }
}

TEST(StoreAuth, AClientWithTheWrongTokenIsRefusedAndGetsNoData) {
  auto server = server_with_token(kToken);
  TcpStore("127.0.0.1", server->port(), 5s, kToken).set("key", to_bytes(kSecretValue));
  EXPECT_EQ(code_of_connecting(*server, "another-token"), ErrorCode::kUnauthorized);
  // By hand: a proof made with a guessed token closes the connection, and a request sent with
  // it is not answered.
  util::Fd stranger = testing::connect_to(address_of(*server));
  ASSERT_TRUE(stranger.valid());
  util::Nonce nonce = util::fresh_nonce();
  send_bytes(stranger.get(), auth_request(store::Command::kAuthHello, nonce));
  Bytes8 challenge = read_for(stranger.get(), 4 + 1 + 64, 5s);
  ASSERT_EQ(challenge.size(), 4u + 1 + 64);
  util::Nonce server_nonce;
  std::memcpy(server_nonce.data(), challenge.data() + 5, server_nonce.size());
  util::Digest guess =
      store::auth_mac("another-token", store::AuthSide::kClient, nonce, server_nonce);
  Bytes8 both = auth_request(store::Command::kAuthProof, guess);
  Bytes8 get = get_request("key");
  both.insert(both.end(), get.begin(), get.end());
  send_bytes(stranger.get(), both);
  bool closed = false;
  Bytes8 answer = read_for(stranger.get(), 1 << 16, 5s, &closed);
  EXPECT_TRUE(closed);
  EXPECT_FALSE(contains(answer, kSecretValue));
  EXPECT_TRUE(answer.empty());
}

TEST(StoreAuth, AnAuthenticationRecordedEarlierCannotBeReplayed) {
  auto server = server_with_token(kToken);
  Bytes8 recorded;
  {
    WireTap tap(address_of(*server));
    TcpStore client("127.0.0.1", tap.address().port(), 5s, kToken);
    client.set("key", to_bytes(kSecretValue));
    recorded = tap.to_target();
  }
  // The client's first two frames: its hello (4 + 1 + 32 bytes) and its proof (4 + 1 + 32).
  ASSERT_GE(recorded.size(), 2u * 37);
  util::Fd replay = testing::connect_to(address_of(*server));
  ASSERT_TRUE(replay.valid());
  send_bytes(replay.get(), Bytes8(recorded.begin(), recorded.begin() + 37));
  ASSERT_EQ(read_for(replay.get(), 4 + 1 + 64, 5s).size(), 4u + 1 + 64);
  Bytes8 rest(recorded.begin() + 37, recorded.begin() + 74);
  Bytes8 get = get_request("key");
  rest.insert(rest.end(), get.begin(), get.end());
  send_bytes(replay.get(), rest);
  bool closed = false;
  Bytes8 answer = read_for(replay.get(), 1 << 16, 5s, &closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(answer.empty()) << "the server answered a replayed proof";
}

TEST(StoreAuth, AServerThatDoesNotKnowTheTokenIsRefusedByTheClient) {
  // An open store: the client will not trust it with its requests.
  auto open = server_with_token("");
  EXPECT_EQ(code_of_connecting(*open, kToken), ErrorCode::kUnauthorized);
  // A store of another job.
  auto other = server_with_token("another-token");
  EXPECT_EQ(code_of_connecting(*other, kToken), ErrorCode::kUnauthorized);

  // An impostor answering with a made-up proof: the client never sends its own.
  util::Fd listener = util::listen_on(util::resolve("127.0.0.1", 0), /*non_blocking=*/false);
  int port = util::local_address_of(listener.get()).port();
  std::thread impostor_client([&] {
    try {
      TcpStore client("127.0.0.1", port, 3s, kToken);
      ADD_FAILURE() << "the client accepted an impostor store";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnauthorized) << e.what();
    }
  });
  util::Fd connection(::accept(listener.get(), nullptr, nullptr));
  ASSERT_TRUE(connection.valid());
  Bytes8 hello = read_for(connection.get(), 37, 5s);
  EXPECT_EQ(hello.size(), 37u);
  std::vector<uint8_t> forged{static_cast<uint8_t>(store::Status::kOk)};
  forged.resize(1 + 64, 0x42);
  send_bytes(connection.get(), store::frame(forged));
  bool closed = false;
  Bytes8 after = read_for(connection.get(), 1 << 16, 5s, &closed);
  impostor_client.join();
  EXPECT_TRUE(after.empty()) << "the client sent its proof to an impostor";
  EXPECT_FALSE(contains(hello, kToken));
}

TEST(StoreAuth, WithoutATokenTheStoreIsOpen) {
  auto server = server_with_token("");
  TcpStore client("127.0.0.1", server->port(), 5s, "");
  client.set("key", to_bytes("value"));
  EXPECT_EQ(to_string(client.get("key")), "value");
  util::Fd raw = testing::connect_to(address_of(*server));
  send_bytes(raw.get(), get_request("key"));
  EXPECT_TRUE(contains(read_for(raw.get(), 4 + 1 + 4 + 5, 5s), "value"));
}

TEST(StoreAuth, AClientWithoutTheTokenIsToldTheStoreWantsIt) {
  auto server = server_with_token(kToken);
  try {
    TcpStore client("127.0.0.1", server->port(), 5s, "");
    ADD_FAILURE() << "an unauthenticated client was served";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnauthorized) << e.what();
    EXPECT_NE(e.message().find("WEFT_JOB_TOKEN"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace weft
