#include "util/small_copy.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>

namespace weft {
namespace {

// Every length from 0 to 16, from and to every offset in a line: the bytes copied match the
// source, and no byte around them changes.
TEST(SmallCopy, CopiesExactlyTheBytesAskedForAtEveryLengthAndOffset) {
  constexpr std::size_t kRoom = 64;
  constexpr uint8_t kGuard = 0xA5;
  std::array<uint8_t, kRoom> source;
  for (std::size_t i = 0; i < kRoom; ++i) source[i] = static_cast<uint8_t>(i * 7 + 1);
  for (std::size_t bytes = 0; bytes <= 16; ++bytes) {
    for (std::size_t from = 0; from + bytes <= 32; ++from) {
      for (std::size_t to = 0; to + bytes <= 32; to += 3) {
        std::array<uint8_t, kRoom> out;
        out.fill(kGuard);
        util::copy_at_most_16(out.data() + to, source.data() + from, bytes);
        for (std::size_t i = 0; i < kRoom; ++i) {
          const bool copied = i >= to && i < to + bytes;
          const uint8_t expected = copied ? source[from + (i - to)] : kGuard;
          ASSERT_EQ(out[i], expected)
              << "byte " << i << " after copying " << bytes << " B from " << from << " to " << to;
        }
      }
    }
  }
}

}  // namespace
}  // namespace weft
