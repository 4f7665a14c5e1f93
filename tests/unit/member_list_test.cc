// MemberList: one value per member, inline up to 16 members and on the heap beyond; copies and
// moves (a queued collective's body carries its lists) keep their own values, and a list reads
// as a span of exactly its members.
#include "coll/member_list.h"

#include <gtest/gtest.h>

#include <numeric>
#include <span>
#include <utility>
#include <vector>

namespace weft::coll {
namespace {

MemberList<std::size_t> numbered(int members) {
  MemberList<std::size_t> list(members);
  for (int m = 0; m < members; ++m) list[m] = 100 + static_cast<std::size_t>(m);
  return list;
}

void expect_numbered(const MemberList<std::size_t>& list, int members) {
  ASSERT_EQ(list.size(), static_cast<std::size_t>(members));
  std::span<const std::size_t> view = list;
  ASSERT_EQ(view.size(), static_cast<std::size_t>(members));
  for (int m = 0; m < members; ++m) {
    EXPECT_EQ(list[m], 100 + static_cast<std::size_t>(m)) << "member " << m;
    EXPECT_EQ(view[m], 100 + static_cast<std::size_t>(m)) << "member " << m;
  }
}

class MemberListSizes : public ::testing::TestWithParam<int> {};

TEST_P(MemberListSizes, FillsEveryMemberWithTheValue) {
  const int members = GetParam();
  MemberList<std::size_t> list(members, 7);
  std::vector<std::size_t> seen(list.begin(), list.end());
  EXPECT_EQ(seen, std::vector<std::size_t>(members, 7));
}

TEST_P(MemberListSizes, ACopyKeepsItsOwnValues) {
  const int members = GetParam();
  MemberList<std::size_t> original = numbered(members);
  MemberList<std::size_t> copy(original);
  for (int m = 0; m < members; ++m) original[m] = 0;
  expect_numbered(copy, members);
  EXPECT_NE(copy.data(), original.data());
}

TEST_P(MemberListSizes, AMovedListStillReadsItsValues) {
  const int members = GetParam();
  MemberList<std::size_t> original = numbered(members);
  MemberList<std::size_t> moved(std::move(original));
  expect_numbered(moved, members);
  EXPECT_EQ(original.size(), 0u);  // NOLINT(bugprone-use-after-move): empty, not dangling
  // Moved again inside a lambda, as a queued body is.
  auto body = [list = std::move(moved)] { return std::accumulate(list.begin(), list.end(), 0ul); };
  auto carried = std::move(body);
  std::size_t expected = 0;
  for (int m = 0; m < members; ++m) expected += 100 + static_cast<std::size_t>(m);
  EXPECT_EQ(carried(), expected);
}

TEST_P(MemberListSizes, AssignmentReplacesSizeAndValues) {
  const int members = GetParam();
  MemberList<std::size_t> target(3, 1);
  MemberList<std::size_t> source = numbered(members);
  target = source;
  expect_numbered(target, members);
  MemberList<std::size_t> other(20, 1);
  other = std::move(source);
  expect_numbered(other, members);
}

// Around the inline limit of 16, and an empty list.
INSTANTIATE_TEST_SUITE_P(AroundTheInlineLimit, MemberListSizes,
                         ::testing::Values(0, 1, 2, 15, 16, 17, 64));

}  // namespace
}  // namespace weft::coll
