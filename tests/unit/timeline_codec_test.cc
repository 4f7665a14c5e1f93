// The timeline's encoding: every field survives a round trip, whatever changes between
// entries, and a repeated op costs a few bytes.
#include "core/timeline_codec.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace weft::core {
namespace {

std::vector<TimelineEntry> round_trip(const std::vector<TimelineEntry>& entries,
                                      std::size_t* encoded_bytes = nullptr) {
  std::vector<uint8_t> segment(entries.size() * TimelineEncoder::kMaxEncodedBytes + 1, 0);
  TimelineEncoder encoder;
  std::size_t used = 0;
  for (const TimelineEntry& entry : entries) {
    std::size_t n = encoder.encode(entry, segment.data() + used);
    EXPECT_LE(n, TimelineEncoder::kMaxEncodedBytes);
    used += n;
  }
  if (encoded_bytes != nullptr) *encoded_bytes = used;
  std::vector<TimelineEntry> decoded;
  // The whole buffer: the zero after the last entry is the end marker.
  decode_timeline_segment(segment.data(), segment.size(),
                          [&](const TimelineEntry& entry) { decoded.push_back(entry); });
  return decoded;
}

void expect_same(const TimelineEntry& a, const TimelineEntry& b, std::size_t i) {
  EXPECT_EQ(a.start_ticks, b.start_ticks) << i;
  // A running op has no end yet, and an end before the start is kept as no duration.
  bool no_duration = a.outcome == OpOutcome::kRunning || a.end_ticks < a.start_ticks;
  EXPECT_EQ(no_duration ? a.start_ticks : a.end_ticks, b.end_ticks) << i;
  EXPECT_EQ(a.seq, b.seq) << i;
  EXPECT_EQ(a.bytes, b.bytes) << i;
  EXPECT_EQ(a.op, b.op) << i;
  EXPECT_EQ(a.algorithm, b.algorithm) << i;
  EXPECT_EQ(a.peer, b.peer) << i;
  EXPECT_EQ(a.dtype, b.dtype) << i;
  EXPECT_EQ(a.outcome, b.outcome) << i;
}

TEST(TimelineCodec, EveryFieldSurvivesWhateverChanges) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  std::vector<TimelineEntry> entries = {
      {1000, 1500, 0, 8, "all_reduce", "ring", -1, DType::kFloat32, OpOutcome::kDone},
      {2000, 2600, 1, 8, "all_reduce", "ring", -1, DType::kFloat32, OpOutcome::kDone},
      // p2p: no seq, a start before the previous one, a null algorithm
      {1800, 9000, -1, 0, "send", nullptr, 3, DType::kUInt8, OpOutcome::kDone},
      {1700, 1700, -1, 0, "recv", nullptr, 2, DType::kUInt8, OpOutcome::kRunning},
      // a seq jump, a failure, huge and negative values
      {kMax / 2, kMax / 2 + 7, 1'000'000'000'000, kMax, "broadcast", "tree",
       std::numeric_limits<int32_t>::max(), DType::kBFloat16, OpOutcome::kTimeout},
      {0, 5, kMin / 2, -1, "barrier", "", std::numeric_limits<int32_t>::min(), DType::kBool,
       OpOutcome::kPeerFailure},
      // an end before the start (clocks of two CPUs): kept as a zero duration
      {100, 90, 3, 16, "reduce", "ring", 0, DType::kInt64, OpOutcome::kDone},
  };
  std::vector<TimelineEntry> decoded = round_trip(entries);
  ASSERT_EQ(decoded.size(), entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) expect_same(entries[i], decoded[i], i);
}

TEST(TimelineCodec, ARepeatedOpTakesAFewBytes) {
  std::vector<TimelineEntry> entries;
  for (int64_t seq = 0; seq < 1000; ++seq) {
    int64_t start = 5'000'000'000 + seq * 900;
    entries.push_back(
        {start, start + 700, seq, 8, "all_reduce", "shm", -1, DType::kFloat32, OpOutcome::kDone});
  }
  std::size_t bytes = 0;
  std::vector<TimelineEntry> decoded = round_trip(entries, &bytes);
  ASSERT_EQ(decoded.size(), entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) expect_same(entries[i], decoded[i], i);
  EXPECT_LE(bytes, 1000u * 6 + 64);
}

TEST(TimelineCodec, ATruncatedSegmentStopsAtTheLastWholeEntry) {
  TimelineEncoder encoder;
  std::vector<uint8_t> segment(256, 0);
  TimelineEntry first{10, 20, 0, 8, "all_reduce", "ring", -1, DType::kFloat32, OpOutcome::kDone};
  TimelineEntry second{
      30, 40, 1, 1 << 20, "all_gather", "ring", -1, DType::kFloat32, OpOutcome::kDone};
  std::size_t first_bytes = encoder.encode(first, segment.data());
  std::size_t second_bytes = encoder.encode(second, segment.data() + first_bytes);
  int visited = 0;
  decode_timeline_segment(segment.data(), first_bytes + second_bytes - 1,
                          [&](const TimelineEntry&) { ++visited; });
  EXPECT_EQ(visited, 1);
}

}  // namespace
}  // namespace weft::core
