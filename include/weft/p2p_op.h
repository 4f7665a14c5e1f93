// weft::P2POp — one send or receive of a batch_isend_irecv, as torch.distributed.P2POp.
#pragma once

#include "weft/buffer.h"

namespace weft {

// Receive from whichever rank sends first.
inline constexpr int kAnySource = -1;

struct P2POp {
  enum class Kind { kSend, kRecv };

  static P2POp send(ConstBufferView data, int peer, int tag = 0) {
    return {Kind::kSend, BufferView(const_cast<void*>(data.data()), data.count(), data.dtype()),
            peer, tag};
  }
  static P2POp recv(BufferView data, int peer, int tag = 0) {
    return {Kind::kRecv, data, peer, tag};
  }

  Kind kind;
  BufferView buffer;  // read-only for a send
  int peer;
  int tag;
};

}  // namespace weft
