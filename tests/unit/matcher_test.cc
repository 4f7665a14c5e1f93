// The Matcher's two queues, through many rounds: list nodes are reused (matcher.h), and reuse
// must never change which receive a message meets or leave state behind from an earlier use.
#include "transport/matcher.h"

#include <gtest/gtest.h>

#include <vector>

namespace weft::transport {
namespace {

constexpr uint64_t kContext = 7;

RequestPtr receive_from(int peer, uint64_t tag, std::vector<char>& buffer) {
  return std::make_shared<Request>(Request::Kind::kRecv, peer, kContext, tag, Signature{},
                                   buffer.data(), buffer.size());
}

FrameHeader message_from(int source, uint64_t tag, uint64_t bytes) {
  FrameHeader header;
  header.source = static_cast<uint32_t>(source);
  header.context = kContext;
  header.tag = tag;
  header.bytes = bytes;
  return header;
}

TEST(Matcher, PostedReceivesMeetMessagesInPostOrderRoundAfterRound) {
  BufferPool pool;
  Matcher matcher(pool);
  std::vector<char> buffer(8);
  // More receives at once than the matcher keeps spare nodes, then fewer: both ways of
  // removing a node are taken.
  for (int round = 0; round < 200; ++round) {
    const int posted = round % 2 ? 100 : 3;
    std::vector<RequestPtr> receives;
    for (int i = 0; i < posted; ++i) {
      // Every other one from anyone: a message from rank 1 takes the first that fits.
      receives.push_back(receive_from(i % 2 ? kAnyPeer : 1, /*tag=*/round, buffer));
      matcher.add_posted(receives.back());
    }
    for (int i = 0; i < posted; ++i) {
      RequestPtr met = matcher.take_posted(message_from(1, round, 8));
      ASSERT_EQ(met, receives[i]) << "round " << round << ", message " << i;
    }
    EXPECT_EQ(matcher.take_posted(message_from(1, round, 8)), nullptr);
  }
}

TEST(Matcher, AReceiveTakenOutOfTheMiddleLeavesTheOthersInOrder) {
  BufferPool pool;
  Matcher matcher(pool);
  std::vector<char> buffer(8);
  for (int round = 0; round < 100; ++round) {
    std::vector<RequestPtr> receives;
    for (int i = 0; i < 5; ++i) {
      receives.push_back(receive_from(2, /*tag=*/1, buffer));
      matcher.add_posted(receives.back());
    }
    ASSERT_TRUE(matcher.erase_posted(receives[2].get()));
    EXPECT_FALSE(matcher.erase_posted(receives[2].get()));
    for (int i : {0, 1, 3, 4}) ASSERT_EQ(matcher.take_posted(message_from(2, 1, 8)), receives[i]);
  }
}

TEST(Matcher, AReusedUnexpectedMessageStartsUnclaimedAndIncomplete) {
  BufferPool pool;
  Matcher matcher(pool);
  std::vector<char> buffer(64);
  for (int round = 0; round < 200; ++round) {
    const uint64_t bytes = round % 3 == 0 ? 0 : 64;
    UnexpectedMessage* message = matcher.add_unexpected(message_from(3, round, bytes));
    ASSERT_NE(message, nullptr);
    EXPECT_FALSE(message->complete);
    EXPECT_EQ(message->claimed_by, nullptr);
    EXPECT_EQ(message->header.tag, static_cast<uint64_t>(round));
    EXPECT_EQ(message->header.bytes, bytes);
    EXPECT_GE(message->capacity, bytes);
    // Claimed half the time, then completed, as a receive posted mid-payload does.
    RequestPtr receive = receive_from(3, round, buffer);
    ASSERT_EQ(matcher.find_unexpected(*receive), message);
    if (round % 2) message->claimed_by = receive;
    message->complete = true;
    EXPECT_EQ(matcher.find_unexpected(*receive), round % 2 ? nullptr : message);
    matcher.erase_unexpected(message);
    EXPECT_EQ(matcher.find_unexpected(*receive), nullptr);
    EXPECT_FALSE(matcher.release_claim(receive.get()));
  }
}

// A parked message has no buffer until it is unparked, is matched like any other, and counts
// as parked until it is unparked or erased, through node reuse.
TEST(Matcher, ParkedMessagesMatchGetTheirBufferWhenUnparkedAndAreCounted) {
  BufferPool pool;
  Matcher matcher(pool);
  std::vector<char> buffer(64);
  for (int round = 0; round < 100; ++round) {
    UnexpectedMessage* parked = matcher.add_parked(message_from(1, round, 64));
    ASSERT_TRUE(parked->parked);
    EXPECT_EQ(parked->buffer, nullptr);
    EXPECT_EQ(matcher.parked(), 1);
    RequestPtr receive = receive_from(1, round, buffer);
    ASSERT_EQ(matcher.find_unexpected(*receive), parked);
    if (round % 2) {
      matcher.unpark(parked);
      EXPECT_FALSE(parked->parked);
      ASSERT_NE(parked->buffer, nullptr);
      EXPECT_GE(parked->capacity, 64u);
      EXPECT_EQ(matcher.parked(), 0);
    }
    matcher.erase_unexpected(parked);
    EXPECT_EQ(matcher.parked(), 0) << "round " << round;
    // A node reused for an ordinary message carries nothing of the parked one.
    UnexpectedMessage* ordinary = matcher.add_unexpected(message_from(1, round, 8));
    EXPECT_FALSE(ordinary->parked);
    EXPECT_FALSE(ordinary->unpark_wanted);
    matcher.erase_unexpected(ordinary);
  }
}

TEST(Matcher, WhatEachSenderHoldsCountsBuffersNotParkedPayloads) {
  BufferPool pool;
  Matcher matcher(pool);
  EXPECT_EQ(matcher.held_from(1), 0u);
  EXPECT_EQ(matcher.held_from(-1), 0u);  // kAnyPeer holds nothing
  UnexpectedMessage* first = matcher.add_unexpected(message_from(1, 1, 1000));
  UnexpectedMessage* second = matcher.add_unexpected(message_from(1, 2, 5000));
  UnexpectedMessage* other = matcher.add_unexpected(message_from(3, 1, 100));
  UnexpectedMessage* parked = matcher.add_parked(message_from(1, 3, 1u << 20));
  EXPECT_EQ(matcher.held_from(1), first->capacity + second->capacity);
  EXPECT_GE(matcher.held_from(1), 6000u);
  EXPECT_EQ(matcher.held_from(3), other->capacity);
  EXPECT_EQ(matcher.held_from(2), 0u);
  EXPECT_EQ(matcher.held_from(1000), 0u);  // a sender never seen
  matcher.unpark(parked);
  EXPECT_EQ(matcher.held_from(1), first->capacity + second->capacity + parked->capacity);
  matcher.erase_unexpected(first);
  matcher.erase_unexpected(parked);
  EXPECT_EQ(matcher.held_from(1), second->capacity);
  matcher.erase_unexpected(second);
  matcher.erase_unexpected(other);
  EXPECT_EQ(matcher.held_from(1), 0u);
  EXPECT_EQ(matcher.held_from(3), 0u);
}

TEST(Matcher, AReceiveThatMayWaitBehindAParkedMessageWantsItUnparked) {
  BufferPool pool;
  Matcher matcher(pool);
  std::vector<char> buffer(8);
  EXPECT_FALSE(matcher.want_parked_from(1));  // nothing parked
  UnexpectedMessage* from_one = matcher.add_parked(message_from(1, 5, 64));
  UnexpectedMessage* from_two = matcher.add_parked(message_from(2, 5, 64));
  EXPECT_FALSE(matcher.want_parked_from(3));
  EXPECT_TRUE(matcher.want_parked_from(1));
  EXPECT_TRUE(from_one->unpark_wanted);
  EXPECT_FALSE(from_two->unpark_wanted);
  // A message a receive has claimed goes to that receive: nothing else wants it out of the way.
  from_two->claimed_by = receive_from(2, 5, buffer);
  EXPECT_TRUE(matcher.want_parked_from(kAnyPeer));  // from_one still is
  EXPECT_FALSE(from_two->unpark_wanted);
  // Posted receives: from the peer itself, or from anyone.
  EXPECT_FALSE(matcher.has_posted_from(1));
  matcher.add_posted(receive_from(2, 9, buffer));
  EXPECT_FALSE(matcher.has_posted_from(1));
  EXPECT_TRUE(matcher.has_posted_from(2));
  matcher.add_posted(receive_from(kAnyPeer, 9, buffer));
  EXPECT_TRUE(matcher.has_posted_from(1));
}

}  // namespace
}  // namespace weft::transport
