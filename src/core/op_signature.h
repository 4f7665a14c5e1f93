// OpSignature — what an operation is, as both sides of every message state it.
//
// Senders stamp it on each message; receivers compare it with their own, so ranks that call
// different operations, counts, dtypes, ops or roots at the same point get an error that says
// what each side called, instead of a hang or a buffer overrun. Packed into the transport's
// opaque 24-byte Signature.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "transport/frame_header.h"
#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft::core {

// The one list of operations, for every layer above: messages carry it, the selector
// (coll/selector.h) chooses algorithms by it and per-op tables (the window's slot stores) index by
// it.
enum class OpKind : uint8_t {
  kPointToPoint = 1,
  kBroadcast,
  kReduce,
  kAllReduce,
  kAllGather,
  kGather,
  kScatter,
  kReduceScatter,
  kAllToAll,
  kBarrier,
  kScan,
  kExscan,  // the last: kOpKindCount counts on it
};
// Op kinds are numbered below this (tables indexed by kind).
inline constexpr int kOpKindCount = static_cast<int>(OpKind::kExscan) + 1;

const char* name_of(OpKind kind);

struct OpSignature {
  OpKind kind = OpKind::kPointToPoint;
  DType dtype = DType::kUInt8;
  ReduceOp::Kind reduce = ReduceOp::kSum;
  int32_t root = -1;
  uint64_t count = 0;  // elements per rank, as the op's caller gave it

  // Inline: every collective packs its signature, and a small one's whole path counts.
  transport::Signature pack() const {
    transport::Signature packed;
    uint8_t* out = packed.bytes.data();
    out[0] = static_cast<uint8_t>(kind);
    out[1] = static_cast<uint8_t>(dtype);
    out[2] = static_cast<uint8_t>(reduce);
    std::memcpy(out + 4, &root, sizeof root);
    std::memcpy(out + 8, &count, sizeof count);
    return packed;
  }
  static OpSignature unpack(const transport::Signature& packed);
  // "all_reduce(count=4, float32, sum)" or "send/recv(count=4, float32)".
  std::string describe() const;
};

}  // namespace weft::core
