// Two ranks of the TCP path on loopback (TcpRank), and messages between them whose every byte
// tells its tag and place, for the tests of large messages: streams, parking, zero-copy.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "support/tcp_rank.h"
#include "transport/request.h"
#include "transport/tcp/tcp_path.h"
#include "util/socket.h"

namespace weft::testing {

struct TcpPair {
  std::unique_ptr<TcpRank> receiver;  // rank 0
  std::unique_ptr<TcpRank> sender;    // rank 1
};

// Both ranks with `options` (rank, world size and listen address are set here), each knowing
// where the other listens.
inline TcpPair make_tcp_pair(transport::TcpPathOptions options) {
  options.world_size = 2;
  options.listen_address = util::resolve("127.0.0.1", 0);
  options.rank = 0;
  auto receiver = std::make_unique<TcpRank>(0, options, nullptr);
  options.rank = 1;
  auto sender = std::make_unique<TcpRank>(1, options, nullptr);
  std::vector<util::SocketAddress> addresses{receiver->listen_address(), sender->listen_address()};
  receiver->set_peer_addresses(addresses);
  sender->set_peer_addresses(addresses);
  return TcpPair{std::move(receiver), std::move(sender)};
}

struct TestMessage {
  std::vector<uint8_t> data;
  transport::RequestPtr request;
};

// Differs per tag, per byte and per page, so that a piece written at the wrong offset shows.
inline uint8_t pattern_byte(uint64_t tag, std::size_t i) {
  return static_cast<uint8_t>(tag * 131 + i * 7 + i / 4096);
}

inline TestMessage post_pattern_send(TcpRank& from, int to, uint64_t context, uint64_t tag,
                                     std::size_t bytes) {
  TestMessage message{std::vector<uint8_t>(bytes), nullptr};
  for (std::size_t i = 0; i < bytes; ++i) message.data[i] = pattern_byte(tag, i);
  message.request =
      std::make_shared<transport::Request>(transport::Request::Kind::kSend, to, context, tag,
                                           transport::Signature{}, message.data.data(), bytes);
  from.post_send(message.request);
  return message;
}

// A receive of `capacity` bytes, its buffer filled with 0xee, with a guard byte past its end.
inline TestMessage post_guarded_receive(TcpRank& at, int from, uint64_t context, uint64_t tag,
                                        std::size_t capacity) {
  TestMessage message{std::vector<uint8_t>(capacity + 1, 0xee), nullptr};
  message.request =
      std::make_shared<transport::Request>(transport::Request::Kind::kRecv, from, context, tag,
                                           transport::Signature{}, message.data.data(), capacity);
  at.post_recv(message.request);
  return message;
}

// The receive completed with the pattern of `tag` in its first `bytes`, and its guard intact.
inline ::testing::AssertionResult holds_pattern(const TestMessage& message, uint64_t tag,
                                                std::size_t bytes) {
  if (!message.request->done()) {
    return ::testing::AssertionFailure() << "tag " << tag << " not done";
  }
  if (message.request->failed()) {
    return ::testing::AssertionFailure()
           << "tag " << tag << ": " << message.request->error()->what();
  }
  for (std::size_t i = 0; i < bytes; ++i) {
    if (message.data[i] != pattern_byte(tag, i)) {
      return ::testing::AssertionFailure() << "tag " << tag << " byte " << i << " of " << bytes;
    }
  }
  if (message.data[bytes] != 0xee) return ::testing::AssertionFailure() << "written past the end";
  return ::testing::AssertionSuccess();
}

}  // namespace weft::testing
