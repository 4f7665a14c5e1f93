// Values a member reads from the parts of a group's shared-memory window that other members
// write (docs/RELIABILITY.md, the shared-memory window's table): what the checks accept (everything
// an honest member publishes) and what they reject, naming the field, the value and the limit. End
// to end (a member publishing a broken header fails every member): ShmBuggyMember.* in
// tests/inproc/shm_buggy_member_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "coll/shm/all_to_all_header.h"
#include "transport/frame_header.h"
#include "transport/shm/window_records.h"

namespace weft {
namespace {

using coll::AllToAllHeader;
using coll::AllToAllHeaderView;
using coll::decode_all_to_all_header;

constexpr uint64_t kDirectFrom = 64 * 1024;

// A header as shm_all_to_all writes it for `sends` and `expects` (one per member).
struct HeaderBytes {
  HeaderBytes(const std::vector<uint64_t>& sends, const std::vector<uint64_t>& expects,
              uint64_t flags)
      : p(static_cast<int>(sends.size())), header(p), bytes(header.bytes(), 0) {
    uint64_t largest = 0;
    for (int d = 0; d < p; ++d) {
      header.set_sends_to(bytes.data(), d, sends[d]);
      header.set_address_for(bytes.data(), d, 0x7f0000001000u + 4096u * d);
      header.set_expects_from(bytes.data(), d, expects[d]);
      largest = std::max(largest, sends[d]);
    }
    header.set_largest(bytes.data(), largest);
    header.set_flags(bytes.data(), flags);
  }
  AllToAllHeaderView decode() const {
    return decode_all_to_all_header(bytes.data(), p, kDirectFrom);
  }
  int p;
  AllToAllHeader header;
  std::vector<uint8_t> bytes;
};

TEST(AllToAllHeader, EveryHeaderAnHonestMemberWritesDecodesAsWritten) {
  for (int p : {2, 3, 8}) {
    std::vector<uint64_t> sends(p), expects(p);
    for (int d = 0; d < p; ++d) {
      sends[d] = d % 3 == 0 ? 0 : 1000u * (d + 1);
      expects[d] = 7u * d;
    }
    for (uint64_t flags : {uint64_t{0}, AllToAllHeader::kCanReadDirectly}) {
      HeaderBytes h(sends, expects, flags);
      AllToAllHeaderView view = h.decode();
      ASSERT_FALSE(view.fault) << view.fault.to_string();
      EXPECT_EQ(view.largest, *std::max_element(sends.begin(), sends.end()));
      EXPECT_EQ(view.can_read_directly, flags != 0);
      EXPECT_FALSE(view.no_data_in_round_zero);
    }
  }
  // Nothing sent at all; the largest message there is; large pieces left out of round 0.
  EXPECT_FALSE(HeaderBytes({0, 0}, {0, 0}, 0).decode().fault);
  EXPECT_FALSE(
      HeaderBytes({transport::kLargestMessageBytes, 1}, {transport::kLargestMessageBytes, 0}, 0)
          .decode()
          .fault);
  AllToAllHeaderView direct =
      HeaderBytes({kDirectFrom, 5}, {1, 1}, AllToAllHeader::kKnownFlags).decode();
  ASSERT_FALSE(direct.fault) << direct.fault.to_string();
  EXPECT_TRUE(direct.can_read_directly);
  EXPECT_TRUE(direct.no_data_in_round_zero);
}

TEST(AllToAllHeader, ALargestSendOtherThanTheLargestPieceIsAFault) {
  for (uint64_t largest : {uint64_t{0}, uint64_t{99}, uint64_t{101}, ~uint64_t{0}}) {
    HeaderBytes h({100, 40}, {1, 1}, 0);
    h.header.set_largest(h.bytes.data(), largest);
    AllToAllHeaderView view = h.decode();
    ASSERT_TRUE(view.fault) << largest;
    EXPECT_STREQ(view.fault.field, "largest send");
    EXPECT_EQ(view.fault.value, largest);
    EXPECT_EQ(view.fault.limit, 100u);
    EXPECT_NE(view.fault.to_string().find("largest send " + std::to_string(largest)),
              std::string::npos);
  }
}

TEST(AllToAllHeader, SizesNoProcessCouldHoldAreFaultsNotMismatches) {
  const uint64_t huge = transport::kLargestMessageBytes + 1;
  HeaderBytes sends({1, huge, 3}, {0, 0, 0}, 0);
  ASSERT_TRUE(sends.decode().fault);
  EXPECT_STREQ(sends.decode().fault.field, "bytes sent to one member");
  EXPECT_EQ(sends.decode().fault.value, huge);
  EXPECT_EQ(sends.decode().fault.limit, transport::kLargestMessageBytes);
  HeaderBytes expects({1, 2, 3}, {0, ~uint64_t{0}, 0}, 0);
  ASSERT_TRUE(expects.decode().fault);
  EXPECT_STREQ(expects.decode().fault.field, "bytes expected from one member");
  EXPECT_EQ(expects.decode().fault.value, ~uint64_t{0});
}

TEST(AllToAllHeader, FlagsNoMemberWritesAreFaults) {
  HeaderBytes unknown({10, 10}, {10, 10}, 4);
  ASSERT_TRUE(unknown.decode().fault);
  EXPECT_STREQ(unknown.decode().fault.field, "flags");
  EXPECT_EQ(unknown.decode().fault.value, 4u);
  EXPECT_EQ(unknown.decode().fault.limit, AllToAllHeader::kKnownFlags);
  // No data in round 0 from a member that cannot read directly, or whose pieces are small:
  // the group would skip data that only that member would have sent.
  HeaderBytes cannot_read({kDirectFrom, 10}, {10, 10}, AllToAllHeader::kNoDataInRoundZero);
  ASSERT_TRUE(cannot_read.decode().fault);
  EXPECT_STREQ(cannot_read.decode().fault.field, "flags");
  HeaderBytes small({kDirectFrom - 1, 10}, {10, 10}, AllToAllHeader::kKnownFlags);
  ASSERT_TRUE(small.decode().fault);
  EXPECT_STREQ(small.decode().fault.field, "largest send");
  EXPECT_EQ(small.decode().fault.limit, kDirectFrom);
}

TEST(AllToAllHeader, AnAddressToReadFromMustBeSomewhere) {
  EXPECT_FALSE(coll::check_direct_read_address(0x7f0000001000u, 1u << 20));
  EXPECT_FALSE(coll::check_direct_read_address(~uint64_t{0} - 10, 10));
  transport::RecordFault null = coll::check_direct_read_address(0, 100);
  ASSERT_TRUE(null);
  EXPECT_STREQ(null.field, "buffer address");
  transport::RecordFault wraps = coll::check_direct_read_address(~uint64_t{0} - 10, 11);
  ASSERT_TRUE(wraps);
  EXPECT_STREQ(wraps.field, "buffer address");
  EXPECT_EQ(wraps.value, ~uint64_t{0} - 10);
}

TEST(WindowRecords, APidMustNameAProcess) {
  EXPECT_FALSE(transport::check_member_pid(1));
  EXPECT_FALSE(transport::check_member_pid(4194304));
  for (int32_t pid : {0, -1, INT32_MIN}) {
    transport::RecordFault fault = transport::check_member_pid(pid);
    ASSERT_TRUE(fault) << pid;
    EXPECT_STREQ(fault.field, "pid");
    EXPECT_EQ(fault.limit, 1u);
  }
}

TEST(WindowRecords, TheSegmentsHeaderMustDescribeThisGroup) {
  EXPECT_FALSE(transport::check_window_header(7, 7, 4, 4, 1 << 20, 1 << 20));
  transport::RecordFault magic = transport::check_window_header(6, 7, 4, 4, 1 << 20, 1 << 20);
  ASSERT_TRUE(magic);
  EXPECT_STREQ(magic.field, "magic");
  transport::RecordFault members = transport::check_window_header(7, 7, 5, 4, 1 << 20, 1 << 20);
  ASSERT_TRUE(members);
  EXPECT_STREQ(members.field, "member count");
  EXPECT_EQ(members.value, 5u);
  EXPECT_EQ(members.limit, 4u);
  transport::RecordFault slots = transport::check_window_header(7, 7, 4, 4, 1 << 30, 1 << 20);
  ASSERT_TRUE(slots);
  EXPECT_STREQ(slots.field, "slot bytes");
  EXPECT_EQ(slots.to_string(), "slot bytes 1073741824 (exactly 1048576)");
}

TEST(WindowRecords, APoisonWordNamesAMemberOrNobody) {
  constexpr uint32_t kFlag = 0x80000000u;
  EXPECT_EQ(transport::poisoner_of(1, kFlag, 4), 0);
  EXPECT_EQ(transport::poisoner_of(4, kFlag, 4), 3);
  EXPECT_EQ(transport::poisoner_of(3 | kFlag, kFlag, 4), 2);
  EXPECT_EQ(transport::poisoner_of(5, kFlag, 4), -1);
  EXPECT_EQ(transport::poisoner_of(kFlag, kFlag, 4), -1);
  EXPECT_EQ(transport::poisoner_of(0x7fffffffu, kFlag, 4), -1);
}

}  // namespace
}  // namespace weft
