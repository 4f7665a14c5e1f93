// ShmRing and Mailbox: records cross between two threads whole and in order through every
// wrap of the ring; a full ring refuses; a mailbox of another job cannot be attached.
#include "transport/shm/shm_ring.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "support/errors.h"
#include "transport/shm/mailbox.h"
#include "weft/error.h"

namespace weft::transport {
namespace {

using testing::error_of;

constexpr std::size_t kCapacity = 4096;

struct RingMemory {
  RingMemory() : bytes(new (std::align_val_t{64}) uint8_t[sizeof(RingControl) + kCapacity]()) {
    new (bytes) RingControl();
  }
  ~RingMemory() { operator delete[](bytes, std::align_val_t{64}); }
  uint8_t* bytes;
};

uint8_t byte_of(uint32_t record, std::size_t index) {
  return static_cast<uint8_t>(record * 31 + index * 7);
}

TEST(ShmRing, RecordsOfEverySizeArriveWholeAndInOrderAcrossThreads) {
  RingMemory memory;
  ShmRing producer(memory.bytes, kCapacity);
  ShmRing consumer(memory.bytes, kCapacity);
  constexpr uint32_t kRecords = 20'000;
  const std::size_t largest = producer.max_body();
  std::thread writer([&] {
    std::mt19937 random(7);
    for (uint32_t record = 0; record < kRecords; ++record) {
      std::size_t bytes = random() % (largest + 1);
      uint8_t* body;
      while (!(body = producer.reserve(record, bytes))) std::this_thread::yield();
      for (std::size_t i = 0; i < bytes; ++i) body[i] = byte_of(record, i);
      producer.commit();
    }
  });
  std::mt19937 random(7);
  uint32_t mismatches = 0;
  for (uint32_t record = 0; record < kRecords; ++record) {
    std::size_t bytes = random() % (largest + 1);
    ShmRing::Record got;
    while (!consumer.front(&got)) std::this_thread::yield();
    ASSERT_EQ(got.kind, record);
    ASSERT_EQ(got.bytes, bytes) << "record " << record;
    for (std::size_t i = 0; i < bytes; ++i) mismatches += got.body[i] != byte_of(record, i);
    consumer.pop();
  }
  writer.join();
  EXPECT_EQ(mismatches, 0u);
  EXPECT_TRUE(consumer.empty());
}

TEST(ShmRing, AFullRingRefusesUntilTheConsumerMakesRoom) {
  RingMemory memory;
  ShmRing ring(memory.bytes, kCapacity);
  int written = 0;
  while (uint8_t* body = ring.reserve(1, 100)) {
    std::memset(body, written, 100);
    ring.commit();
    ++written;
  }
  // 100 bytes and an 8-byte header take two cache lines each.
  EXPECT_EQ(written, static_cast<int>(kCapacity / 128));
  EXPECT_EQ(ring.reserve(1, 0), nullptr);
  ShmRing::Record record;
  ASSERT_TRUE(ring.front(&record));
  EXPECT_EQ(record.body[0], 0);
  ring.pop();
  EXPECT_NE(ring.reserve(1, 100), nullptr);
}

TEST(Mailbox, TheSegmentHoldsADigestOfTheTokenNotTheToken) {
  // Any length: the segment keeps 32 bytes of digest whatever the token's size.
  const std::string token =
      "a-job-token-that-must-not-be-readable-in-shared-memory-" + std::string(200, 'x');
  Mailbox ours = Mailbox::create(4, kCapacity, token);
  const char* header = reinterpret_cast<const char*>(&ours.header());
  std::string bytes(header, sizeof(MailboxHeader));
  EXPECT_EQ(bytes.find("a-job-token"), std::string::npos) << "the token is in the segment";
  Mailbox theirs = Mailbox::attach(ours.address(), 4, kCapacity, token);
  EXPECT_TRUE(theirs.valid());
}

TEST(Mailbox, AnotherJobsMailboxIsRefusedAndOursIsShared) {
  Mailbox ours = Mailbox::create(4, kCapacity, "token-a");
  MailboxAddress address = ours.address();
  EXPECT_EQ(address.pid, getpid());
  MailboxAddress parsed;
  ASSERT_TRUE(MailboxAddress::parse(address.to_string(), &parsed));
  EXPECT_EQ(parsed.fd, address.fd);
  EXPECT_EQ(parsed.address, address.address);
  EXPECT_FALSE(MailboxAddress::parse("127.0.0.1:5000", &parsed));

  Error error = error_of([&] { Mailbox::attach(address, 4, kCapacity, "token-b"); });
  EXPECT_EQ(error.code(), ErrorCode::kUnauthorized) << error.what();
  Mailbox theirs = Mailbox::attach(address, 4, kCapacity, "token-a");
  ShmRing writer = theirs.ring(2);
  uint8_t* body = writer.reserve(5, 3);
  ASSERT_NE(body, nullptr);
  std::memcpy(body, "abc", 3);
  writer.commit();
  ShmRing reader = ours.ring(2);
  ShmRing::Record record;
  ASSERT_TRUE(reader.front(&record));
  EXPECT_EQ(record.kind, 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(record.body), record.bytes), "abc");
  EXPECT_TRUE(ours.ring(1).empty());
}

}  // namespace
}  // namespace weft::transport
