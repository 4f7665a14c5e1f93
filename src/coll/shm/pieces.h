// How a shared-memory broadcast cuts a message into rounds.
//
// A message that fits one round still goes in several once it is large enough: the readers'
// copy out of round k then overlaps the root's copy in of round k+1, instead of everyone
// waiting for one whole copy before the other starts. Pieces stay at least kMinPiece so that
// the round's synchronisation (about a microsecond) stays small beside the copies.
// NOTE(pipelining): only broadcast is cut this way. In the symmetric algorithms every member
// copies in and out in the same rounds, so extra rounds overlap nothing; they only add
// barriers, each of which waits for the slowest member.
#pragma once

#include <algorithm>
#include <cstddef>

namespace weft::coll {

inline constexpr std::size_t kMinPiece = 64 * 1024;
inline constexpr std::size_t kPiecesPerMessage = 4;

// Bytes per round for a message of `largest` bytes when a round holds at most `budget`.
inline std::size_t piece_bytes(std::size_t largest, std::size_t budget) {
  std::size_t pipelined = (largest / kPiecesPerMessage + 4095) / 4096 * 4096;
  return std::max<std::size_t>(1, std::min(budget, std::max(kMinPiece, pipelined)));
}

}  // namespace weft::coll
