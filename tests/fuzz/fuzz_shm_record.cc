// A ShmRing's consumer and ShmPath's record decoder (shm/ring_record.h, shm/shm_record.h)
// on a ring whose bytes and producer position are arbitrary, as a buggy or hostile process of
// the same host can make them. The input: the producer's tail (u64), then the ring's bytes.
// Properties: no crash; every record handed out lies inside the ring and before the tail, and
// every payload the decoder points at lies inside its record (each byte is read, so ASan sees
// any that does not); a broken ring stays broken.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "seeds.h"
#include "transport/frame_header.h"
#include "transport/shm/ring_record.h"
#include "transport/shm/shm_record.h"
#include "transport/shm/shm_ring.h"

namespace {

using weft::fuzz::Bytes;
using namespace weft::transport;

constexpr std::size_t kCapacity = 4096;
constexpr uint32_t kSender = 1;
constexpr uint32_t kOfferSlots = 64;

// A ring's memory, exactly: ASan flags a read one byte past it.
struct RingMemory {
  RingMemory() : bytes(new (std::align_val_t{64}) uint8_t[sizeof(RingControl) + kCapacity]()) {
    new (bytes) RingControl();
  }
  ~RingMemory() { operator delete[](bytes, std::align_val_t{64}); }
  uint8_t* data() const { return bytes + sizeof(RingControl); }
  uint8_t* bytes;
};

uint8_t checksum(const uint8_t* bytes, std::size_t size) {
  uint8_t sum = 0;
  for (std::size_t i = 0; i < size; ++i) sum ^= bytes[i];
  return sum;
}

// A ring as ShmPath fills it: the tail, then the ring's bytes.
Bytes ring_input(void (*write)(ShmRing&)) {
  RingMemory memory;
  ShmRing producer(memory.bytes, kCapacity);
  write(producer);
  uint64_t tail = producer.control().tail.load();
  Bytes input(sizeof tail);
  std::memcpy(input.data(), &tail, sizeof tail);
  input.insert(input.end(), memory.data(), memory.data() + kCapacity);
  return input;
}

void put_message(ShmRing& ring, uint32_t kind, uint64_t message_bytes, std::size_t extra,
                 FrameKind frame = FrameKind::kData) {
  FrameHeader header;
  header.kind = frame;
  header.source = kSender;
  header.bytes = message_bytes;
  uint8_t* body = ring.reserve(kind, kFrameHeaderBytes + extra);
  encode(header, body);
  std::memset(body + kFrameHeaderBytes, 0x42, extra);
  ring.commit();
}

void inline_and_offer(ShmRing& ring) {
  put_message(ring, kInlineRecord, 100, 100);
  put_message(ring, kOfferRecord, 1 << 20, sizeof(OfferBody));
}

void news(ShmRing& ring) {
  put_message(ring, kNewsRecord, 40, 40, FrameKind::kPeerFailed);
  put_message(ring, kNewsRecord, 12, 12, FrameKind::kContextAbort);
}

void chunks(ShmRing& ring) {
  put_message(ring, kFirstChunkRecord, 1500, 1000);
  std::memset(ring.reserve(kNextChunkRecord, 500), 0x43, 500);
  ring.commit();
}

void padded(ShmRing& ring) {
  // Fill, empty, then a record that needs padding at the ring's end.
  for (int i = 0; i < 3; ++i) put_message(ring, kInlineRecord, 1000, 1000);
  ring.control().head.store(ring.control().tail.load());
  put_message(ring, kInlineRecord, 1500, 1500);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  weft::fuzz::write_seeds_if_asked(
      {ring_input(inline_and_offer), ring_input(chunks), ring_input(padded), ring_input(news)});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < sizeof(uint64_t)) return 0;
  RingMemory memory;
  uint64_t tail;
  std::memcpy(&tail, data, sizeof tail);
  std::memcpy(memory.data(), data + sizeof tail, std::min(size - sizeof tail, kCapacity));
  ShmRing consumer(memory.bytes, kCapacity);
  consumer.control().tail.store(tail);
  uint64_t chunk_room = 0;
  volatile uint8_t sink = 0;
  for (int records = 0; records < 256; ++records) {
    uint64_t head = consumer.control().head.load();
    ShmRing::Record record;
    if (!consumer.front(&record)) break;
    const uint8_t* end = record.body + record.bytes;
    if (record.body < memory.data() || end > memory.data() + kCapacity) std::abort();
    if (consumer.control().head.load() - head > kCapacity) std::abort();
    sink = sink ^ checksum(record.body, record.bytes);
    ShmRecordLimits limits;
    limits.sender = kSender;
    limits.offer_slots = kOfferSlots;
    limits.chunk_room = chunk_room;
    ShmRecord decoded = decode_shm_record(record.kind, record.body, record.bytes, limits);
    if (decoded.fault) break;  // the transport fails the peer here
    if (decoded.payload_bytes != 0 &&
        (decoded.payload < record.body || decoded.payload + decoded.payload_bytes > end)) {
      std::abort();
    }
    sink = sink ^ checksum(decoded.payload, decoded.payload_bytes);
    if (record.kind == kOfferRecord && decoded.offer.slot >= kOfferSlots) std::abort();
    if (record.kind == kNewsRecord && decoded.payload_bytes > kNewsTextBytes) std::abort();
    if (record.kind == kFirstChunkRecord) chunk_room = decoded.header.bytes;
    if (record.kind == kFirstChunkRecord || record.kind == kNextChunkRecord) {
      chunk_room -= decoded.payload_bytes;
    }
    consumer.pop();
  }
  if (consumer.fault()) {
    ShmRing::Record record;
    if (consumer.front(&record)) std::abort();  // broken stays broken
  }
  return 0;
}
