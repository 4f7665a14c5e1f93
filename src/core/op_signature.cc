#include "core/op_signature.h"

#include <cstring>

namespace weft::core {

const char* name_of(OpKind kind) {
  switch (kind) {
    case OpKind::kPointToPoint:
      return "send/recv";
    case OpKind::kBroadcast:
      return "broadcast";
    case OpKind::kReduce:
      return "reduce";
    case OpKind::kAllReduce:
      return "all_reduce";
    case OpKind::kAllGather:
      return "all_gather";
    case OpKind::kGather:
      return "gather";
    case OpKind::kScatter:
      return "scatter";
    case OpKind::kReduceScatter:
      return "reduce_scatter";
    case OpKind::kAllToAll:
      return "all_to_all";
    case OpKind::kBarrier:
      return "barrier";
    case OpKind::kScan:
      return "scan";
    case OpKind::kExscan:
      return "exscan";
  }
  return "unknown op";
}

OpSignature OpSignature::unpack(const transport::Signature& packed) {
  const uint8_t* in = packed.bytes.data();
  OpSignature signature;
  signature.kind = static_cast<OpKind>(in[0]);
  signature.dtype = static_cast<DType>(in[1]);
  signature.reduce = static_cast<ReduceOp::Kind>(in[2]);
  std::memcpy(&signature.root, in + 4, sizeof signature.root);
  std::memcpy(&signature.count, in + 8, sizeof signature.count);
  return signature;
}

std::string OpSignature::describe() const {
  std::string text = std::string(name_of(kind)) + "(count=" + std::to_string(count) + ", " +
                     std::string(name_of(dtype));
  bool reduces = kind == OpKind::kReduce || kind == OpKind::kAllReduce ||
                 kind == OpKind::kReduceScatter || kind == OpKind::kScan || kind == OpKind::kExscan;
  if (reduces) text += ", " + std::string(name_of(reduce));
  if (root >= 0) text += ", root=" + std::to_string(root);
  return text + ")";
}

}  // namespace weft::core
