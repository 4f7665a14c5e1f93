// frame_header_problem: the check every TCP frame passes before anything is matched or allocated
// for it, as a pure function (the TCP transport calls it; fuzz_frame_header fuzzes it).
#include <gtest/gtest.h>

#include <string>

#include "transport/frame_header.h"

namespace weft::transport {
namespace {

constexpr FrameLimits kLimits{1000, 100};

FrameHeader header(FrameKind kind, uint32_t source, uint64_t bytes) {
  FrameHeader header;
  header.kind = kind;
  header.source = source;
  header.bytes = bytes;
  return header;
}

TEST(FrameHeaderCheck, FramesWithinTheLimitsPass) {
  EXPECT_EQ(frame_header_problem(header(FrameKind::kData, 3, 1000), 3, kLimits), "");
  EXPECT_EQ(frame_header_problem(header(FrameKind::kData, 3, 0), 3, kLimits), "");
  for (FrameKind kind : {FrameKind::kGoodbye, FrameKind::kPeerFailed, FrameKind::kContextAbort}) {
    EXPECT_EQ(frame_header_problem(header(kind, 3, 100), 3, kLimits), "");
  }
}

TEST(FrameHeaderCheck, EachBrokenFieldIsNamedWithItsValueAndLimit) {
  EXPECT_EQ(frame_header_problem(header(FrameKind::kData, 4, 10), 3, kLimits),
            "sent a frame as rank 4");
  EXPECT_EQ(frame_header_problem(header(FrameKind::kData, 0xffffffffu, 10), 3, kLimits),
            "sent a frame as rank 4294967295");
  EXPECT_EQ(frame_header_problem(header(FrameKind::kData, 3, 1001), 3, kLimits),
            "sent a data frame of 1001 bytes, more than any message can be (the limit is 1000 "
            "bytes)");
  EXPECT_EQ(frame_header_problem(header(FrameKind::kPeerFailed, 3, 101), 3, kLimits),
            "sent a control frame of 101 bytes (the limit is 100 bytes)");
  EXPECT_EQ(frame_header_problem(header(static_cast<FrameKind>(9), 3, 0), 3, kLimits),
            "sent a frame of unknown kind 9");
}

}  // namespace
}  // namespace weft::transport
