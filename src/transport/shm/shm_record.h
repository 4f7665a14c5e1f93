// decode_shm_record — what a record of a peer's ring means to ShmPath, as a pure function of
// its kind and body. The peer wrote them in memory it can change at any time: every length, rank,
// slot and kind is checked here before ShmPath copies, allocates or indexes with it, so a
// buggy peer yields a RecordFault (the peer is then failed), never a write outside a buffer.
//
// Records (the kinds ShmPath writes):
//   kInlineRecord      FrameHeader, then the whole payload
//   kOfferRecord       FrameHeader, OfferBody: the receiver reads the payload from the sender
//   kFirstChunkRecord  FrameHeader, then the payload's first bytes
//   kNextChunkRecord   more of the payload of the message being copied through in chunks
//   kNewsRecord        FrameHeader of kind kPeerFailed (tag: the rank) or kContextAbort
//                      (context), then the reason's text: what the sender learnt that every
//                      rank must know
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "transport/frame_header.h"
#include "transport/shm/record_fault.h"

namespace weft::transport {

enum ShmRecordKind : uint32_t {
  kInlineRecord = 1,
  kOfferRecord = 2,
  kFirstChunkRecord = 3,
  kNextChunkRecord = 4,
  kNewsRecord = 5,
};
inline constexpr uint32_t kLastShmRecordKind = kNewsRecord;
// The longest reason a news record carries (a writer cuts a longer one).
inline constexpr std::size_t kNewsTextBytes = 4096;

struct OfferBody {
  uint64_t address;  // the payload in the sender's address space
  uint32_t slot;     // in the sender's mailbox: where the receiver says it read the payload
  uint32_t generation;
};
// An offer slot's word is generation << 2 | state in 64 bits; generations wrap within 30 bits.
inline constexpr uint32_t kLargestOfferGeneration = 0x3fffffffu;

struct ShmRecordLimits {
  uint32_t sender = 0;       // the rank that writes the ring
  uint32_t offer_slots = 0;  // slots in a mailbox
  uint64_t chunk_room = 0;   // bytes still awaited of the message coming in chunks
};

struct ShmRecord {
  RecordFault fault;                 // set: nothing else is meaningful
  FrameHeader header;                // all kinds but kNextChunkRecord
  const uint8_t* payload = nullptr;  // the payload bytes the record carries (not kOfferRecord)
  std::size_t payload_bytes = 0;
  OfferBody offer{};  // kOfferRecord
};

namespace shm_record_detail {

inline bool is_news(FrameKind kind) {
  return kind == FrameKind::kPeerFailed || kind == FrameKind::kContextAbort;
}

inline RecordFault check_frame(const uint8_t* body, std::size_t bytes, uint32_t sender, bool news,
                               FrameHeader* header) {
  if (bytes < kFrameHeaderBytes) {
    return record_fault("record length", bytes, "at least", kFrameHeaderBytes);
  }
  uint32_t magic;
  uint16_t version;
  std::memcpy(&magic, body, sizeof magic);
  std::memcpy(&version, body + sizeof magic, sizeof version);
  if (magic != kFrameMagic) return record_fault("frame magic", magic, "exactly", kFrameMagic);
  if (version != kProtocolVersion) {
    return record_fault("frame version", version, "exactly", kProtocolVersion);
  }
  *header = decode(body);
  if (news) {
    if (!is_news(header->kind)) {
      return record_fault("news kind", static_cast<uint64_t>(header->kind),
                          "either 3 (a rank failed) or",
                          static_cast<uint64_t>(FrameKind::kContextAbort));
    }
  } else if (header->kind != FrameKind::kData) {
    return record_fault("frame kind", static_cast<uint64_t>(header->kind), "exactly",
                        static_cast<uint64_t>(FrameKind::kData));
  }
  if (header->source != sender)
    return record_fault("source rank", header->source, "exactly", sender);
  if (header->bytes > kLargestMessageBytes) {
    return record_fault("message length", header->bytes, "at most", kLargestMessageBytes);
  }
  return {};
}

}  // namespace shm_record_detail

// Inline: it runs for every record.
inline ShmRecord decode_shm_record(uint32_t kind, const uint8_t* body, std::size_t bytes,
                                   const ShmRecordLimits& limits) {
  ShmRecord record;
  if (kind == kNextChunkRecord) {
    if (bytes > limits.chunk_room) {
      record.fault = record_fault("chunk length", bytes, "at most (the rest of the message)",
                                  limits.chunk_room);
    }
    record.payload = body;
    record.payload_bytes = bytes;
    return record;
  }
  if (kind < kInlineRecord || kind > kLastShmRecordKind) {
    record.fault = record_fault("record kind", kind, "from 1 to", kLastShmRecordKind);
    return record;
  }
  // A sender writes a message in chunks to its end before it writes anything else.
  if (limits.chunk_room != 0) {
    record.fault = record_fault(
        "record kind", kind, "while a message in chunks is unfinished, exactly", kNextChunkRecord);
    return record;
  }
  record.fault = shm_record_detail::check_frame(body, bytes, limits.sender, kind == kNewsRecord,
                                                &record.header);
  if (record.fault) return record;
  record.payload = body + kFrameHeaderBytes;
  record.payload_bytes = bytes - kFrameHeaderBytes;
  const uint64_t message = record.header.bytes;
  switch (kind) {
    case kInlineRecord:
      if (message != record.payload_bytes) {
        record.fault = record_fault("message length", message, "exactly (the record's payload)",
                                    record.payload_bytes);
      }
      break;
    case kOfferRecord:
      if (record.payload_bytes != sizeof(OfferBody)) {
        record.fault =
            record_fault("record length", bytes, "exactly", kFrameHeaderBytes + sizeof(OfferBody));
        break;
      }
      std::memcpy(&record.offer, record.payload, sizeof record.offer);
      record.payload = nullptr;
      record.payload_bytes = 0;
      if (record.offer.slot >= limits.offer_slots) {
        record.fault = record_fault("offer slot", record.offer.slot, "below", limits.offer_slots);
      } else if (record.offer.generation > kLargestOfferGeneration) {
        record.fault = record_fault("offer generation", record.offer.generation, "at most",
                                    kLargestOfferGeneration);
      }
      break;
    case kNewsRecord:
      if (message > kNewsTextBytes) {
        record.fault = record_fault("news length", message, "at most", kNewsTextBytes);
      } else if (message != record.payload_bytes) {
        record.fault = record_fault("news length", message, "exactly (the record's payload)",
                                    record.payload_bytes);
      }
      break;
    default:  // kFirstChunkRecord
      if (record.payload_bytes > message) {
        record.fault = record_fault("chunk length", record.payload_bytes,
                                    "at most (the message's length)", message);
      }
      break;
  }
  return record;
}

}  // namespace weft::transport
