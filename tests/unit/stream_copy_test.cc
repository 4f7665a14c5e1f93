#include "util/stream_copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace weft {
namespace {

// Every alignment of source and destination and sizes around the streaming threshold, against
// a plain loop; the bytes around the destination stay untouched.
// copy_streaming streams from 64 bytes on: the same sizes around 64 bytes.
void expect_exact_copies(void (*copy)(void*, const void*, std::size_t), std::size_t from) {
  for (std::size_t bytes :
       {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{65},
        std::size_t{127}, from - 1, from, from + 1, from + 63, 3 * from + 17}) {
    for (std::size_t src_shift : {0, 1, 8, 63}) {
      for (std::size_t dst_shift : {0, 5, 16, 33}) {
        std::vector<uint8_t> source(bytes + 64), target(bytes + 128, 0xEE);
        for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<uint8_t>(i * 7 + 3);
        copy(target.data() + dst_shift, source.data() + src_shift, bytes);
        for (std::size_t i = 0; i < target.size(); ++i) {
          bool inside = i >= dst_shift && i < dst_shift + bytes;
          uint8_t want = inside ? source[i - dst_shift + src_shift] : 0xEE;
          ASSERT_EQ(target[i], want)
              << "bytes " << bytes << " shifts " << src_shift << "/" << dst_shift << " at " << i;
        }
      }
    }
  }
}

TEST(StreamCopy, CopiesExactlyAtAnyAlignmentAndSize) {
  expect_exact_copies(util::stream_copy, util::kStreamCopyFrom);
}

TEST(StreamCopy, CopyStreamingCopiesExactlyAtAnyAlignmentAndSize) {
  expect_exact_copies(util::copy_streaming, 4096);
}

// An empty buffer's data() may be null (a rank that receives nothing in an uneven all_to_all):
// memcpy must not be given it, even for 0 bytes (UBSan fails the test if it is).
TEST(StreamCopy, NothingToCopyMayComeWithNullPointers) {
  std::vector<uint8_t> empty;
  util::stream_copy(empty.data(), empty.data(), 0);
  util::copy_into_output(empty.data(), empty.data(), 0, 0);
  util::copy_into_output(empty.data(), empty.data(), 0, util::kStreamOutputFrom);
  EXPECT_TRUE(empty.empty());
}

}  // namespace
}  // namespace weft
