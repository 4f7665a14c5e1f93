// Records read from a peer's shared-memory ring (docs/RELIABILITY.md, "The transport, against
// any client"): the ring's framing (ring_record.h) and the transport's records (shm_record.h)
// are checked before use, a broken one names the field, the value and the limit, and a rank
// whose peer writes garbage into its ring fails that peer, not itself.
#include "transport/shm/shm_record.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/tcp_rank.h"
#include "transport/frame_header.h"
#include "transport/request.h"
#include "transport/shm/mailbox.h"
#include "transport/shm/ring_record.h"
#include "transport/shm/shm_path.h"
#include "transport/shm/shm_ring.h"
#include "weft/error.h"

namespace weft::transport {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kCapacity = 4096;

struct RingMemory {
  RingMemory() : bytes(new (std::align_val_t{64}) uint8_t[sizeof(RingControl) + kCapacity]()) {
    new (bytes) RingControl();
  }
  ~RingMemory() { operator delete[](bytes, std::align_val_t{64}); }
  RingControl& control() { return *reinterpret_cast<RingControl*>(bytes); }
  uint8_t* data() { return bytes + sizeof(RingControl); }
  // Writes a record header (kind, body length) at `position`, as a producer would.
  void put_header(uint64_t position, uint32_t kind, uint32_t length) {
    uint32_t header[2] = {kind, length};
    std::memcpy(data() + (position % kCapacity), header, sizeof header);
  }
  uint8_t* bytes;
};

// --- the ring's framing ---------------------------------------------------------------------

TEST(RingRecord, ARecordTheProducerWroteDecodesAsWritten) {
  RingMemory memory;
  ShmRing producer(memory.bytes, kCapacity);
  ASSERT_NE(producer.reserve(3, 100), nullptr);
  producer.commit();
  RingRecordView view = decode_ring_record(memory.data(), kCapacity, 0, 128);
  ASSERT_FALSE(view.fault) << view.fault.to_string();
  EXPECT_EQ(view.kind, 3u);
  EXPECT_EQ(view.bytes, 100u);
  EXPECT_EQ(view.footprint, 128u);  // 8 + 100 bytes on 64-byte lines
  EXPECT_FALSE(view.padding);
}

TEST(RingRecord, ALengthBeyondTheLargestRecordIsAFault) {
  RingMemory memory;
  memory.put_header(0, 1, 0xfffffff0u);
  RingRecordView view = decode_ring_record(memory.data(), kCapacity, 0, 64);
  ASSERT_TRUE(view.fault);
  EXPECT_STREQ(view.fault.field, "record length");
  EXPECT_EQ(view.fault.value, 0xfffffff0u);
  EXPECT_EQ(view.fault.limit, kCapacity / 2 - 8);
}

TEST(RingRecord, ARecordCrossingTheRingsEndIsAFault) {
  RingMemory memory;
  // 256 bytes before the end, a record claiming 1000: it would wrap.
  const uint64_t head = kCapacity - 256;
  memory.put_header(head, 1, 1000);
  RingRecordView view = decode_ring_record(memory.data(), kCapacity, head, head + 1024);
  ASSERT_TRUE(view.fault);
  EXPECT_STREQ(view.fault.field, "record length");
  EXPECT_EQ(view.fault.value, 1000u);
  EXPECT_EQ(view.fault.limit, 256u - 8);
}

TEST(RingRecord, ARecordLongerThanWhatWasPublishedIsAFault) {
  RingMemory memory;
  memory.put_header(0, 1, 500);  // 512 bytes of ring, but the tail is at 128
  RingRecordView view = decode_ring_record(memory.data(), kCapacity, 0, 128);
  ASSERT_TRUE(view.fault);
  EXPECT_EQ(view.fault.value, 500u);
  EXPECT_EQ(view.fault.limit, 128u - 8);
}

TEST(RingRecord, PaddingThatDoesNotReachTheEndIsAFault) {
  RingMemory memory;
  memory.put_header(0, kRingPadding, 100);
  RingRecordView view = decode_ring_record(memory.data(), kCapacity, 0, kCapacity);
  ASSERT_TRUE(view.fault);
  EXPECT_STREQ(view.fault.field, "padding length");
  EXPECT_EQ(view.fault.limit, kCapacity - 8);
}

TEST(RingRecord, PaddingToTheEndIsSkipped) {
  RingMemory memory;
  const uint64_t head = kCapacity - 128;
  memory.put_header(head, kRingPadding, 120);
  RingRecordView view = decode_ring_record(memory.data(), kCapacity, head, head + 192);
  ASSERT_FALSE(view.fault) << view.fault.to_string();
  EXPECT_TRUE(view.padding);
  EXPECT_EQ(view.footprint, 128u);
}

TEST(RingRecord, PositionsNoProducerWritesAreFaults) {
  RingMemory memory;
  // A tail behind the head, a tail a whole ring and more ahead, a tail off a cache line.
  for (uint64_t tail : {uint64_t{0}, uint64_t{64} + kCapacity + 64, uint64_t{64} + 13}) {
    RingRecordView view = decode_ring_record(memory.data(), kCapacity, 64, tail);
    ASSERT_TRUE(view.fault) << "tail " << tail;
    EXPECT_STREQ(view.fault.field, "bytes published in the ring");
    EXPECT_EQ(view.fault.value, tail - 64);
  }
  RingRecordView view = decode_ring_record(memory.data(), kCapacity, 72, 128);
  ASSERT_TRUE(view.fault);
  EXPECT_STREQ(view.fault.field, "ring head position");
}

TEST(ShmRingValidation, TheConsumerOfABrokenRingGetsNothingMoreAndSaysWhy) {
  RingMemory memory;
  ShmRing consumer(memory.bytes, kCapacity);
  memory.put_header(0, 1, 3000);
  memory.control().tail.store(kCapacity);
  ShmRing::Record record;
  EXPECT_FALSE(consumer.front(&record));
  ASSERT_TRUE(consumer.fault());
  EXPECT_EQ(consumer.fault().to_string(), "record length 3000 (at most 2040)");
  // Mended or not, a broken ring stays broken: the producer is not trusted again.
  memory.put_header(0, 1, 8);
  EXPECT_FALSE(consumer.front(&record));
}

TEST(ShmRingValidation, TheProducerRefusesPositionsTheConsumerCouldNotHaveWritten) {
  {
    RingMemory memory;
    ShmRing producer(memory.bytes, kCapacity);
    memory.control().tail.store(13);
    EXPECT_EQ(producer.reserve(1, 8), nullptr);
    ASSERT_TRUE(producer.fault());
    EXPECT_STREQ(producer.fault().field, "ring tail position");
  }
  {
    RingMemory memory;
    ShmRing producer(memory.bytes, kCapacity);
    // Fill the ring, then claim the consumer read beyond what was written.
    while (producer.reserve(1, 100)) producer.commit();
    memory.control().head.store(memory.control().tail.load() + 640);
    EXPECT_EQ(producer.reserve(1, 100), nullptr);
    ASSERT_TRUE(producer.fault());
    EXPECT_STREQ(producer.fault().field, "bytes the consumer has not read");
  }
}

// --- the transport's records ------------------------------------------------------------------

constexpr uint32_t kSender = 1;

ShmRecordLimits limits(uint64_t chunk_room = 0) {
  ShmRecordLimits limits;
  limits.sender = kSender;
  limits.offer_slots = kOfferSlots;
  limits.chunk_room = chunk_room;
  return limits;
}

// A record body as ShmPath writes it: a frame header then `extra` bytes.
std::vector<uint8_t> record_body(uint64_t message_bytes, std::size_t extra, uint32_t source = 1) {
  FrameHeader header;
  header.source = source;
  header.context = 5;
  header.tag = 9;
  header.bytes = message_bytes;
  std::vector<uint8_t> body(kFrameHeaderBytes + extra, 0xab);
  encode(header, body.data());
  return body;
}

std::vector<uint8_t> offer_body(uint32_t slot, uint32_t generation) {
  std::vector<uint8_t> body = record_body(1 << 20, sizeof(OfferBody));
  OfferBody offer{0x1000, slot, generation};
  std::memcpy(body.data() + kFrameHeaderBytes, &offer, sizeof offer);
  return body;
}

RecordFault fault_of(uint32_t kind, const std::vector<uint8_t>& body,
                     const ShmRecordLimits& given = limits()) {
  return decode_shm_record(kind, body.data(), body.size(), given).fault;
}

TEST(ShmRecord, RecordsAsTheTransportWritesThemDecode) {
  std::vector<uint8_t> inline_body = record_body(100, 100);
  ShmRecord record =
      decode_shm_record(kInlineRecord, inline_body.data(), inline_body.size(), limits());
  ASSERT_FALSE(record.fault) << record.fault.to_string();
  EXPECT_EQ(record.header.tag, 9u);
  EXPECT_EQ(record.payload, inline_body.data() + kFrameHeaderBytes);
  EXPECT_EQ(record.payload_bytes, 100u);

  std::vector<uint8_t> offer = offer_body(63, 7);
  record = decode_shm_record(kOfferRecord, offer.data(), offer.size(), limits());
  ASSERT_FALSE(record.fault) << record.fault.to_string();
  EXPECT_EQ(record.offer.slot, 63u);
  EXPECT_EQ(record.offer.generation, 7u);

  EXPECT_FALSE(fault_of(kFirstChunkRecord, record_body(1 << 20, 32 << 10)));
  EXPECT_FALSE(fault_of(kNextChunkRecord, std::vector<uint8_t>(1000), limits(1000)));
}

// A news record as ShmPath writes it: a header of `kind` then the text.
std::vector<uint8_t> news_body(FrameKind kind, const std::string& text, uint64_t claimed) {
  FrameHeader header;
  header.kind = kind;
  header.source = 1;
  header.tag = 2;
  header.bytes = claimed;
  std::vector<uint8_t> body(kFrameHeaderBytes + text.size());
  encode(header, body.data());
  std::memcpy(body.data() + kFrameHeaderBytes, text.data(), text.size());
  return body;
}

TEST(ShmRecord, NewsOfADeathOrAnAbortDecodesWithItsText) {
  for (FrameKind kind : {FrameKind::kPeerFailed, FrameKind::kContextAbort}) {
    std::vector<uint8_t> body = news_body(kind, "rank 2 died", 11);
    ShmRecord record = decode_shm_record(kNewsRecord, body.data(), body.size(), limits());
    ASSERT_FALSE(record.fault) << record.fault.to_string();
    EXPECT_EQ(record.header.kind, kind);
    EXPECT_EQ(record.header.tag, 2u);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(record.payload), record.payload_bytes),
              "rank 2 died");
  }
}

TEST(ShmRecord, NewsOfAnotherKindOrLengthIsAFault) {
  std::vector<uint8_t> data = news_body(FrameKind::kData, "x", 1);
  EXPECT_EQ(fault_of(kNewsRecord, data).to_string(), "news kind 1 (either 3 (a rank failed) or 4)");
  std::vector<uint8_t> goodbye = news_body(FrameKind::kGoodbye, "", 0);
  EXPECT_STREQ(fault_of(kNewsRecord, goodbye).field, "news kind");
  std::vector<uint8_t> short_text = news_body(FrameKind::kPeerFailed, "abc", 4);
  EXPECT_STREQ(fault_of(kNewsRecord, short_text).field, "news length");
  std::string long_text(kNewsTextBytes + 1, 'y');
  std::vector<uint8_t> too_long = news_body(FrameKind::kPeerFailed, long_text, long_text.size());
  EXPECT_EQ(fault_of(kNewsRecord, too_long).to_string(), "news length 4097 (at most 4096)");
  // A data record may not carry news, nor news a data header.
  std::vector<uint8_t> as_data = news_body(FrameKind::kPeerFailed, "x", 1);
  EXPECT_STREQ(fault_of(kInlineRecord, as_data).field, "frame kind");
}

TEST(ShmRecord, AnUnknownKindIsAFault) {
  for (uint32_t kind : {0u, 6u, 99u, 0xfffffffeu}) {
    RecordFault wrong = fault_of(kind, record_body(0, 0));
    ASSERT_TRUE(wrong) << kind;
    EXPECT_STREQ(wrong.field, "record kind");
    EXPECT_EQ(wrong.value, kind);
  }
}

TEST(ShmRecord, ARecordTooShortForItsHeaderIsAFault) {
  RecordFault wrong = fault_of(kInlineRecord, std::vector<uint8_t>(10));
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong.to_string(), "record length 10 (at least 64)");
}

TEST(ShmRecord, AFrameHeaderOfAnotherRankOrKindOrNoneIsAFault) {
  std::vector<uint8_t> other_rank = record_body(0, 0, /*source=*/2);
  EXPECT_EQ(fault_of(kInlineRecord, other_rank).to_string(), "source rank 2 (exactly 1)");
  std::vector<uint8_t> garbage(kFrameHeaderBytes, 0x11);
  EXPECT_STREQ(fault_of(kInlineRecord, garbage).field, "frame magic");
  std::vector<uint8_t> goodbye = record_body(0, 0);
  goodbye[6] = static_cast<uint8_t>(FrameKind::kGoodbye);
  EXPECT_STREQ(fault_of(kInlineRecord, goodbye).field, "frame kind");
}

TEST(ShmRecord, AnInlineMessageLongerOrShorterThanItsRecordIsAFault) {
  RecordFault wrong = fault_of(kInlineRecord, record_body(5000, 100));
  ASSERT_TRUE(wrong);
  EXPECT_STREQ(wrong.field, "message length");
  EXPECT_EQ(wrong.value, 5000u);
  EXPECT_EQ(wrong.limit, 100u);
  EXPECT_TRUE(fault_of(kInlineRecord, record_body(10, 100)));
}

TEST(ShmRecord, AnOfferOutsideTheSlotsOrOfAnotherSizeIsAFault) {
  RecordFault wrong = fault_of(kOfferRecord, offer_body(kOfferSlots, 1));
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong.to_string(), "offer slot " + std::to_string(kOfferSlots) + " (below " +
                                   std::to_string(kOfferSlots) + ")");
  EXPECT_STREQ(fault_of(kOfferRecord, offer_body(0xffffffffu, 1)).field, "offer slot");
  EXPECT_STREQ(fault_of(kOfferRecord, offer_body(0, 0xffffffffu)).field, "offer generation");
  EXPECT_STREQ(fault_of(kOfferRecord, record_body(1 << 20, 8)).field, "record length");
}

TEST(ShmRecord, HugeOrInconsistentLengthsAreFaults) {
  // A message longer than a process can address; a count gone negative is one of those.
  for (uint64_t huge : {kLargestMessageBytes + 1, ~uint64_t{0}}) {
    RecordFault wrong = fault_of(kFirstChunkRecord, record_body(huge, 64));
    ASSERT_TRUE(wrong);
    EXPECT_STREQ(wrong.field, "message length");
    EXPECT_EQ(wrong.limit, kLargestMessageBytes);
  }
  // A first chunk larger than its message; a next chunk larger than the rest of it.
  EXPECT_STREQ(fault_of(kFirstChunkRecord, record_body(10, 64)).field, "chunk length");
  RecordFault wrong = fault_of(kNextChunkRecord, std::vector<uint8_t>(1000), limits(999));
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong.to_string(), "chunk length 1000 (at most (the rest of the message) 999)");
  // Another message before the one in chunks is whole.
  EXPECT_STREQ(fault_of(kInlineRecord, record_body(0, 0), limits(10)).field, "record kind");
}

// --- a buggy peer against a real rank ---------------------------------------------------------

const std::string kToken = "shm-record-test-token";
constexpr uint64_t kContext = 1;

struct Rank {
  std::unique_ptr<testing::TcpRank> transport;  // TCP, with shared memory added ahead of it
  ShmPath* shm = nullptr;
  std::vector<std::optional<MailboxAddress>> mailboxes;  // every rank's, for set_local_peers
};

// `world` ranks of one process, each with TCP and shared memory, as bootstrap makes them.
// `tcp_unreachable`: every rank is told that port 1 is every other's TCP address, so that any
// use of TCP between them fails at once. Rank `late` is left to map its peers' mailboxes
// itself (set_local_peers), as a rank that starts slowly does after the others.
std::vector<Rank> make_ranks(int world, bool tcp_unreachable = false, int late = -1) {
  std::vector<Rank> ranks(world);
  std::vector<util::SocketAddress> addresses;
  std::vector<std::optional<MailboxAddress>> mailboxes;
  for (int rank = 0; rank < world; ++rank) {
    ShmPathOptions options;
    options.rank = rank;
    options.world_size = world;
    options.job_token = kToken;
    ranks[rank].transport =
        testing::make_tcp_rank(rank, kToken, world, 10s, [&](PathEvents& events) {
          auto shm = std::make_unique<ShmPath>(options, events);
          ranks[rank].shm = shm.get();
          return shm;
        });
    addresses.push_back(ranks[rank].transport->listen_address());
    mailboxes.push_back(ranks[rank].shm->address());
  }
  if (tcp_unreachable) {
    for (util::SocketAddress& address : addresses) address = util::resolve("127.0.0.1", 1);
  }
  for (int rank = 0; rank < world; ++rank) {
    ranks[rank].transport->set_peer_addresses(addresses);
    ranks[rank].mailboxes = mailboxes;
    if (rank != late) ranks[rank].shm->set_local_peers(mailboxes);
  }
  return ranks;
}

struct Message {
  std::vector<char> data;
  RequestPtr request;
};

Message post(Transport& at, Request::Kind kind, int peer, uint64_t tag, std::size_t bytes) {
  Message message{std::vector<char>(bytes, 'x'), nullptr};
  message.request = std::make_shared<Request>(kind, peer, kContext, tag, Signature{},
                                              message.data.data(), message.data.size());
  if (kind == Request::Kind::kSend) {
    at.post_send(message.request);
  } else {
    at.post_recv(message.request);
  }
  return message;
}

bool finishes(const RequestPtr& request, Transport& at) {
  return request->wait(std::chrono::steady_clock::now() + 10s, 100,
                       [&] { return at.poll(*request); });
}

// Waits for `request` at `at`, which must fail because rank `peer` shut down.
void expect_failed_as_shut_down(const RequestPtr& request, Transport& at, int peer) {
  ASSERT_TRUE(finishes(request, at));
  ASSERT_TRUE(request->failed());
  const Error& error = *request->error();
  EXPECT_EQ(error.code(), ErrorCode::kPeerFailure) << error.what();
  EXPECT_EQ(error.context().peer, peer) << error.what();
  EXPECT_NE(error.message().find("rank " + std::to_string(peer) + " (pid "), std::string::npos)
      << error.what();
  EXPECT_NE(error.message().find("has shut down"), std::string::npos) << error.what();
}

// Writes a record of `kind` and `bytes` of 0x5a into rank `owner`'s ring for `sender`, as a
// buggy `sender` would.
void scribble(const MailboxAddress& owner, int sender, int world, uint32_t kind,
              std::size_t bytes) {
  Mailbox theirs = Mailbox::attach(owner, world, ShmPathOptions{}.ring_capacity, kToken);
  ShmRing ring = theirs.ring(sender);
  uint8_t* body = ring.reserve(kind, bytes);
  ASSERT_NE(body, nullptr);
  std::memset(body, 0x5a, bytes);
  ring.commit();
  theirs.notify();
}

TEST(ShmBuggyPeer, GarbageInARingFailsThatPeerNamingItAndTheRankGoesOn) {
  std::vector<Rank> ranks = make_ranks(3);
  Transport& rank0 = *ranks[0].transport;
  Message waiting = post(rank0, Request::Kind::kRecv, 1, 7, 64);
  scribble(ranks[0].shm->address(), 1, 3, /*kind=*/99, 64);
  ASSERT_TRUE(finishes(waiting.request, rank0));
  ASSERT_TRUE(waiting.request->failed());
  const Error& error = *waiting.request->error();
  EXPECT_EQ(error.code(), ErrorCode::kPeerFailure) << error.what();
  EXPECT_EQ(error.context().peer, 1) << error.what();
  EXPECT_NE(error.message().find("rank 1 wrote a record"), std::string::npos) << error.what();
  EXPECT_NE(error.message().find("record kind 99 (from 1 to 5)"), std::string::npos)
      << error.what();
  // Rank 0 still talks to rank 2, both ways.
  Message from2 = post(rank0, Request::Kind::kRecv, 2, 8, 4096);
  Message to0 = post(*ranks[2].transport, Request::Kind::kSend, 0, 8, 4096);
  ASSERT_TRUE(finishes(from2.request, rank0));
  EXPECT_FALSE(from2.request->failed()) << from2.request->error()->what();
  ASSERT_TRUE(finishes(to0.request, *ranks[2].transport));
  Message to2 = post(rank0, Request::Kind::kSend, 2, 9, 100);
  Message from0 = post(*ranks[2].transport, Request::Kind::kRecv, 0, 9, 100);
  ASSERT_TRUE(finishes(from0.request, *ranks[2].transport));
  EXPECT_FALSE(from0.request->failed()) << from0.request->error()->what();
  ASSERT_TRUE(finishes(to2.request, rank0));
}

TEST(ShmBuggyPeer, ALengthPastTheRingFailsThatPeerNotTheRank) {
  std::vector<Rank> ranks = make_ranks(2);
  Transport& rank0 = *ranks[0].transport;
  Message waiting = post(rank0, Request::Kind::kRecv, 1, 7, 64);
  // A record header claiming more than the ring holds, published as one line.
  Mailbox theirs =
      Mailbox::attach(ranks[0].shm->address(), 2, ShmPathOptions{}.ring_capacity, kToken);
  ShmRing ring = theirs.ring(1);
  RingControl& control = ring.control();
  auto* data = reinterpret_cast<uint8_t*>(&control) + sizeof(RingControl);
  uint32_t header[2] = {kInlineRecord, 0x7fffffffu};
  std::memcpy(data, header, sizeof header);
  control.tail.store(64, std::memory_order_release);
  theirs.notify();
  ASSERT_TRUE(finishes(waiting.request, rank0));
  ASSERT_TRUE(waiting.request->failed());
  const Error& error = *waiting.request->error();
  EXPECT_EQ(error.code(), ErrorCode::kPeerFailure) << error.what();
  EXPECT_EQ(error.context().peer, 1) << error.what();
  EXPECT_NE(error.message().find("record length 2147483647"), std::string::npos) << error.what();
}

// --- liveness and news without TCP -------------------------------------------------------------

TEST(ShmLiveness, APeerThatShutsDownIsNoticedThroughSharedMemoryAlone) {
  std::vector<Rank> ranks = make_ranks(2, /*tcp_unreachable=*/true);
  Transport& rank0 = *ranks[0].transport;
  Message waiting = post(rank0, Request::Kind::kRecv, 1, 7, 64);
  // Were TCP asked to watch rank 1, its refused connection would fail the receive by now.
  EXPECT_FALSE(waiting.request->wait(std::chrono::steady_clock::now() + 300ms, 0));
  ranks[1].transport->shutdown(std::chrono::steady_clock::now() + 2s);
  expect_failed_as_shut_down(waiting.request, rank0, 1);
}

TEST(ShmLiveness, WhatAPeerSentBeforeItsGoodbyeIsStillDelivered) {
  std::vector<Rank> ranks = make_ranks(2, /*tcp_unreachable=*/true);
  Message sent = post(*ranks[1].transport, Request::Kind::kSend, 0, 5, 100);
  ASSERT_TRUE(finishes(sent.request, *ranks[1].transport));
  ranks[1].transport->shutdown(std::chrono::steady_clock::now() + 2s);
  Message received = post(*ranks[0].transport, Request::Kind::kRecv, 1, 5, 100);
  ASSERT_TRUE(finishes(received.request, *ranks[0].transport));
  EXPECT_FALSE(received.request->failed()) << received.request->error()->what();
}

TEST(ShmLiveness, ADeathOneRankLearnsReachesItsSameHostPeersAsNews) {
  std::vector<Rank> ranks = make_ranks(3, /*tcp_unreachable=*/true);
  Message waiting = post(*ranks[0].transport, Request::Kind::kRecv, 2, 7, 64);
  // Rank 1 learns that rank 2 died (as its TCP path or its own watch would report it).
  ranks[1].transport->peer_lost(
      2, std::make_shared<const Error>(ErrorCode::kPeerFailure, "rank 2 was struck by lightning"),
      /*died=*/true);
  ASSERT_TRUE(finishes(waiting.request, *ranks[0].transport));
  ASSERT_TRUE(waiting.request->failed());
  const Error& error = *waiting.request->error();
  EXPECT_EQ(error.code(), ErrorCode::kPeerFailure) << error.what();
  EXPECT_NE(error.message().find("rank 2 was struck by lightning (reported by rank 1)"),
            std::string::npos)
      << error.what();
}

// A fast rank sends to a slow one, hears of a death and leaves, all before the slow one maps
// its mailbox: the slow one reads the message, the news and the goodbye from its own mailbox,
// and must not take the peer for a stranger to dial over TCP (refused: no cause, no goodbye).
TEST(ShmLiveness, APeerGoneBeforeWeMappedItsMailboxLeftForTheCauseItTold) {
  std::vector<Rank> ranks = make_ranks(3, /*tcp_unreachable=*/true, /*late=*/2);
  Message sent = post(*ranks[1].transport, Request::Kind::kSend, 2, 5, 64);
  ASSERT_TRUE(finishes(sent.request, *ranks[1].transport));
  ranks[1].transport->peer_lost(
      0, std::make_shared<const Error>(ErrorCode::kPeerFailure, "rank 0 was struck by lightning"),
      /*died=*/true);
  ranks[1].transport.reset();  // says goodbye, and closes its mailbox
  ranks[2].shm->set_local_peers(ranks[2].mailboxes);
  EXPECT_TRUE(ranks[2].shm->reaches(1));  // not left to TCP
  Transport& slow = *ranks[2].transport;
  Message waiting = post(slow, Request::Kind::kRecv, 1, 6, 64);
  expect_failed_as_shut_down(waiting.request, slow, 1);
  const std::string what = waiting.request->error()->what();
  EXPECT_NE(what.find("rank 0 was struck by lightning (reported by rank 1)"), std::string::npos)
      << what;
  // What it sent before it left is still delivered.
  Message received = post(slow, Request::Kind::kRecv, 1, 5, 64);
  ASSERT_TRUE(finishes(received.request, slow));
  EXPECT_FALSE(received.request->failed()) << received.request->error()->what();
  // A send to it fails, rather than waiting on a ring nobody reads.
  Message to_gone = post(slow, Request::Kind::kSend, 1, 7, 64);
  ASSERT_TRUE(finishes(to_gone.request, slow));
  EXPECT_TRUE(to_gone.request->failed());
}

TEST(ShmLiveness, AnAbortedContextReachesSameHostPeersAsNews) {
  std::vector<Rank> ranks = make_ranks(2, /*tcp_unreachable=*/true);
  Message waiting = post(*ranks[0].transport, Request::Kind::kRecv, 1, 7, 64);
  ranks[1].transport->abort_context(
      kContext, std::make_shared<const Error>(ErrorCode::kAborted, "rank 1 gave up"));
  ASSERT_TRUE(finishes(waiting.request, *ranks[0].transport));
  ASSERT_TRUE(waiting.request->failed());
  const Error& error = *waiting.request->error();
  EXPECT_EQ(error.code(), ErrorCode::kAborted) << error.what();
  EXPECT_NE(error.message().find("rank 1 gave up (reported by rank 1)"), std::string::npos)
      << error.what();
}

}  // namespace
}  // namespace weft::transport
