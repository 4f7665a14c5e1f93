// Copies of at most 16 bytes, inline: an eager collective moves a handful of bytes, and a call
// to memcpy (its dispatch on the size, and the call itself) cost as many instructions as the
// copy's own loads and stores many times over.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace weft::util {

// `to` and `from` must not overlap; bytes <= 16. Two moves of a power-of-two size that meet or
// overlap in the middle cover every length between that size and twice it.
inline void copy_at_most_16(void* to, const void* from, std::size_t bytes) {
  auto* out = static_cast<uint8_t*>(to);
  const auto* in = static_cast<const uint8_t*>(from);
  auto two_moves = [&]<typename Word>(Word) {
    Word head, tail;
    std::memcpy(&head, in, sizeof head);
    std::memcpy(&tail, in + bytes - sizeof tail, sizeof tail);
    std::memcpy(out, &head, sizeof head);
    std::memcpy(out + bytes - sizeof tail, &tail, sizeof tail);
  };
  if (bytes >= 8) {
    two_moves(uint64_t{});
  } else if (bytes >= 4) {
    two_moves(uint32_t{});
  } else if (bytes >= 2) {
    two_moves(uint16_t{});
  } else if (bytes == 1) {
    *out = *in;
  }
}

}  // namespace weft::util
