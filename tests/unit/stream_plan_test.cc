// WEFT_SOCKET_NSTREAMS's arithmetic (transport/tcp/streams.h): how many connections a message
// is split across, where each piece lies, the setting's values and what "auto" picks.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "transport/tcp/streams.h"
#include "util/socket.h"
#include "weft/error.h"

namespace weft::transport {
namespace {

TEST(StreamPlan, ASmallMessageStaysOnOneConnection) {
  EXPECT_EQ(stripes_for(0, 8), 1u);
  EXPECT_EQ(stripes_for(2 * kSmallestStripe - 1, 8), 1u);
  EXPECT_EQ(stripes_for(64u << 20, 1), 1u);
  EXPECT_EQ(stripes_for(64u << 20, 0), 1u);
}

TEST(StreamPlan, EveryPieceIsAtLeastTheSmallestStripeAndNoStreamIsOverused) {
  EXPECT_EQ(stripes_for(2 * kSmallestStripe, 8), 2u);
  EXPECT_EQ(stripes_for(3 * kSmallestStripe + 5, 8), 3u);
  EXPECT_EQ(stripes_for(64u << 20, 4), 4u);
  EXPECT_EQ(stripes_for(uint64_t{1} << 40, 100), kMaxStripes);
}

// The pieces cover the message exactly once, in order, for sizes around page boundaries and
// every split the sender may choose, and (from a hostile header) splits no sender makes.
TEST(StreamPlan, PiecesTileTheMessageExactly) {
  for (uint64_t bytes :
       {uint64_t{0}, uint64_t{1}, uint64_t{4095}, uint64_t{4097}, 2 * kSmallestStripe,
        2 * kSmallestStripe + 1, uint64_t{7'340'033}, uint64_t{64} << 20}) {
    for (uint32_t stripes = 1; stripes <= kMaxStripes; ++stripes) {
      uint64_t next = 0;
      for (uint32_t index = 0; index < stripes; ++index) {
        const Piece piece = piece_of(bytes, stripes, index);
        ASSERT_EQ(piece.offset, next) << bytes << " bytes, " << stripes << " ways, piece " << index;
        next += piece.bytes;
      }
      EXPECT_EQ(next, bytes) << bytes << " bytes, " << stripes << " ways";
    }
  }
}

TEST(StreamPlan, PiecesTheSenderMakesAreWholePagesButTheLastAndNeverEmpty) {
  for (uint64_t bytes : {2 * kSmallestStripe, uint64_t{3'000'001}, uint64_t{64} << 20}) {
    const uint32_t stripes = stripes_for(bytes, kMaxStripes);
    for (uint32_t index = 0; index < stripes; ++index) {
      const Piece piece = piece_of(bytes, stripes, index);
      EXPECT_GT(piece.bytes, 0u) << bytes << " piece " << index;
      if (index + 1 < stripes) {
        EXPECT_EQ(piece.bytes % 4096, 0u) << bytes << " piece " << index;
      }
    }
  }
}

TEST(StreamSetting, AutoOrANumberOfConnections) {
  EXPECT_EQ(parse_stream_setting("auto"), 0u);
  EXPECT_EQ(parse_stream_setting(""), 0u);
  EXPECT_EQ(parse_stream_setting("1"), 1u);
  EXPECT_EQ(parse_stream_setting("16"), 16u);
  for (const char* wrong : {"0", "17", "-1", "four", "4x", " 4"}) {
    try {
      parse_stream_setting(wrong);
      ADD_FAILURE() << wrong << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(e.message().find(std::string("WEFT_SOCKET_NSTREAMS=") + wrong), std::string::npos)
          << e.message();
    }
  }
}

TEST(StreamSetting, AutoOpensOnePerTenGigabitsUpToEight) {
  EXPECT_EQ(auto_stream_count(-1, ""), 1u);  // loopback, virtio: no speed
  EXPECT_EQ(auto_stream_count(1'000, "e1000e"), 1u);
  EXPECT_EQ(auto_stream_count(10'000, "veth"), 1u);
  EXPECT_EQ(auto_stream_count(25'000, "mlx5_core"), 2u);
  EXPECT_EQ(auto_stream_count(100'000, "mlx5_core"), 8u);
  EXPECT_EQ(auto_stream_count(400'000, "mlx5_core"), 8u);
  EXPECT_EQ(auto_stream_count(-1, "ena"), 8u);  // AWS caps every flow
}

TEST(StreamSetting, LoopbackIsALinkOfUnknownSpeed) {
  const LinkFacts link = link_of(util::resolve("127.0.0.1", 0));
  EXPECT_EQ(auto_stream_count(link.speed_mbps, link.driver), 1u) << link.interface;
}

}  // namespace
}  // namespace weft::transport
