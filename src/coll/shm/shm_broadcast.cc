#include <algorithm>
#include <cstring>

#include "coll/shm/pieces.h"
#include "coll/shm/shm_collectives.h"
#include "util/small_copy.h"
#include "util/stream_copy.h"

namespace weft::coll {

namespace {

static_assert(CollectiveCall::eager_bytes() <= 16, "eager data is copied by copy_at_most_16");

// The root writes and goes on; the others read the root's line when they get there.
void eager_broadcast(CollectiveCall& call, uint8_t* buffer, std::size_t bytes, int root) {
  call.begin_eager();
  if (call.rank() == root) {
    util::copy_at_most_16(call.my_eager_data(), buffer, bytes);
  } else {
    const uint8_t* theirs = call.await_eager_data(root);
    util::copy_at_most_16(buffer, theirs, bytes);
  }
  call.end_eager();
}

}  // namespace

void shm_broadcast(CollectiveCall& call, void* data, std::size_t bytes, int root) {
  if (call.size() == 1) return;
  auto* buffer = static_cast<uint8_t*>(data);
  if (bytes <= call.eager_bytes()) return eager_broadcast(call, buffer, bytes, root);
  const std::size_t piece = piece_bytes(bytes, call.round_bytes());
  const std::size_t rounds = std::max<std::size_t>(1, (bytes + piece - 1) / piece);
  for (std::size_t k = 0; k < rounds; ++k) {
    std::size_t offset = k * piece;
    std::size_t length = std::min(piece, bytes - std::min(bytes, offset));
    if (call.rank() == root && length) {
      // A large broadcast's slot pieces are always streamed in: its output cannot stay in the
      // cache anyway, so streaming wins wherever the group does not learn the kind of slot
      // stores (docs/algorithms.md).
      if (bytes >= util::kStreamOutputFrom) {
        util::stream_copy(call.round_slot(length), buffer + offset, length);
      } else {
        call.fill_slot(call.round_slot(length), buffer + offset, length, length);
      }
    }
    call.finish_round();
    if (call.rank() != root && length) {
      util::copy_into_output(buffer + offset, call.member_slot(root, length), length, bytes);
    }
  }
}

}  // namespace weft::coll
