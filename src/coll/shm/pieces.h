// How the shared-memory algorithms cut a message into rounds.
//
// A message that fits one round still goes in several once it is large enough: round k's copy
// out (readers) then overlaps round k+1's copy in (writers), instead of everyone waiting for
// one whole copy before the other starts. Pieces stay at least kMinPiece so that the round's
// synchronisation (about a microsecond) stays small beside the copies.
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
