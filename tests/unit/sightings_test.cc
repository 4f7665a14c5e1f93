// Sightings: the sentences a timeout uses to say which ranks had not reached an op and where
// they were instead, and the board entries they are read from.
#include "core/sightings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace weft::core {
namespace {

Sighting in(const char* op, int64_t seq) { return Sighting{true, seq, op}; }
Sighting nowhere() { return Sighting{true}; }

TEST(Sightings, RankListsShowRunsAsRanges) {
  EXPECT_EQ(rank_list({1}), "rank 1");
  EXPECT_EQ(rank_list({0, 2}), "ranks 0, 2");
  EXPECT_EQ(rank_list({0, 1}), "ranks 0, 1");
  EXPECT_EQ(rank_list({0, 1, 2, 3, 5, 7, 8}), "ranks 0-3, 5, 7, 8");
}

TEST(Sightings, EntriesReadBackAsWritten) {
  Sighting s;
  read_collective_entry(collective_entry("all_reduce", 5, false), s);
  EXPECT_EQ(s.seq, 5);
  EXPECT_EQ(s.op, "all_reduce");
  EXPECT_FALSE(s.left);
  read_collective_entry(collective_entry("broadcast", 6, true), s);
  EXPECT_EQ(s.op, "broadcast");
  EXPECT_TRUE(s.left);
  Sighting untouched;
  read_collective_entry("garbage", untouched);
  EXPECT_EQ(untouched.seq, -1);
  EXPECT_EQ(point_to_point_entry("recv", 2), "recv from rank 2");
  EXPECT_EQ(point_to_point_entry("recv", -1), "recv from any rank");
  EXPECT_EQ(point_to_point_entry("send", 0), "send to rank 0");
}

TEST(Sightings, TheRankBehindIsNamedWithWhereItWasLastSeen) {
  std::vector<Sighting> seen = {in("all_reduce", 5), in("broadcast", 4), in("all_reduce", 5)};
  EXPECT_EQ(describe_stall("all_reduce", 5, seen),
            "rank 1 had not reached it (last seen in broadcast #4); ranks 0, 2 were waiting in it");
  EXPECT_EQ(ranks_behind("all_reduce", 5, seen), std::vector<int>{1});
}

TEST(Sightings, ARankNeverSeenOrBlockedInAPointToPointOpIsBehind) {
  std::vector<Sighting> seen = {in("barrier", 3), nowhere(), in("barrier", 3), nowhere()};
  seen[3].waiting = "recv from rank 0";
  EXPECT_EQ(describe_stall("barrier", 3, seen),
            "ranks 1, 3 had not reached it (rank 3 waiting in recv from rank 0); ranks 0, 2 were "
            "waiting in it");
}

TEST(Sightings, RanksAheadOrInAnotherOpOfTheSameNumberAreTold) {
  std::vector<Sighting> seen = {in("all_reduce", 5), in("broadcast", 5), in("barrier", 6)};
  EXPECT_EQ(describe_stall("all_reduce", 5, seen),
            "rank 1 was in broadcast #5 instead; rank 2 was already in barrier #6; rank 0 was "
            "waiting in it");
}

TEST(Sightings, EveryoneThereAndUnknownRanksAreSaid) {
  std::vector<Sighting> all = {in("scan", 2), in("scan", 2)};
  EXPECT_EQ(describe_stall("scan", 2, all), "every rank was waiting in it");
  std::vector<Sighting> some = {in("scan", 2), Sighting{}, nowhere()};
  EXPECT_EQ(describe_stall("scan", 2, some),
            "rank 2 had not reached it; rank 0 was waiting in it; nothing is known of rank 1");
  EXPECT_EQ(describe_stall("scan", 2, some, /*name_unknown=*/false),
            "rank 2 had not reached it; rank 0 was waiting in it");
}

TEST(Sightings, APeerIsDescribedByTheWaitItIsIn) {
  Sighting p2p = nowhere();
  p2p.waiting = "recv from rank 2";
  EXPECT_EQ(describe_peer(1, p2p), "rank 1 was waiting in recv from rank 2");
  EXPECT_EQ(describe_peer(1, in("all_reduce", 4)), "rank 1 was waiting in all_reduce #4");
  Sighting left = in("all_reduce", 4);
  left.left = true;
  EXPECT_NE(describe_peer(1, left).find("rank 1 was seen in no wait"), std::string::npos);
  EXPECT_EQ(describe_peer(1, Sighting{}), "");
}

}  // namespace
}  // namespace weft::core
