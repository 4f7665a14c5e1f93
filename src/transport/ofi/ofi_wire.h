// What the ofi path (ofi_path.h) puts on the wire in front of each chunk of a message: a chunk
// header, and on a message's first chunk its frame header (frame_header.h). Written in the
// host's byte order: every rank of a job runs on one architecture.
//
// Thread-safety: values.
#pragma once

#include <cstdint>

#include "transport/frame_header.h"

namespace weft::transport {

inline constexpr uint32_t kOfiChunkMagic = 0x4f464957;  // "WIFO"

struct OfiChunkHeader {
  uint32_t magic = kOfiChunkMagic;
  uint32_t source = 0;  // the sender's world rank
  uint32_t flags = 0;   // kFirstChunk: a frame header follows; kLastChunk: the message ends
  uint32_t bytes = 0;   // payload bytes in this chunk
  // The chunk's number among those this sender sent to this receiver. A provider may complete
  // receives out of the order they were matched in (a large one goes by its own rendezvous,
  // a small one after it lands first), so the receiver puts them back in order by this.
  uint32_t sequence = 0;
  uint32_t reserved = 0;
};
static_assert(sizeof(OfiChunkHeader) == 24);

inline constexpr uint32_t kFirstChunk = 1;
inline constexpr uint32_t kLastChunk = 2;

// What precedes the payload of a first chunk.
inline constexpr std::size_t kOfiFirstPrefixBytes = sizeof(OfiChunkHeader) + kFrameHeaderBytes;

}  // namespace weft::transport
