// The directory rank 0 publishes (core/rank_directory.h): every rank's host survives the round
// trip, hosts are written once each, and values that are not a directory of the job are errors.
#include "core/rank_directory.h"

#include <gtest/gtest.h>

#include <random>

#include "weft/error.h"

namespace weft::core {
namespace {

TEST(RankDirectory, EveryRanksHostSurvivesTheRoundTrip) {
  std::mt19937 random(7);
  for (int size : {1, 2, 3, 8, 61, 4096}) {
    SCOPED_TRACE(size);
    const int host_count = 1 + static_cast<int>(random() % std::min(size, 300));
    std::vector<std::string> hosts;
    for (int rank = 0; rank < size; ++rank) {
      hosts.push_back("node" + std::to_string(random() % host_count) + "|boot|4026531992");
    }
    std::string value = encode_rank_directory(hosts);
    EXPECT_EQ(parse_rank_directory(value, size), hosts);
    if (size == 4096) {
      EXPECT_LT(value.size(), 30'000u);  // a host is written once, not per rank
    }
  }
}

TEST(RankDirectory, HostsAreListedInOrderOfTheirFirstRank) {
  EXPECT_EQ(encode_rank_directory({"b", "a", "b", "", "a"}), "3\nb\na\n\n0,1,0,2,1");
  EXPECT_EQ(parse_rank_directory("3\nb\na\n\n0,1,0,2,1", 5),
            (std::vector<std::string>{"b", "a", "b", "", "a"}));
}

TEST(RankDirectory, AValueThatIsNotTheJobsDirectoryIsAnError) {
  for (const std::string& value :
       {std::string(""), std::string("x\na\n0,0"), std::string("0\n"), std::string("4\na\n0,0"),
        std::string("1\na\n0"), std::string("1\na\n0,0,0"), std::string("1\na\n0,1"),
        std::string("2\na\nb\n0,2"), std::string("1\na\n0,-1"), std::string("1\na\n0,,"),
        std::string("1\na\n0,0\nmore")}) {
    SCOPED_TRACE(value);
    try {
      parse_rank_directory(value, 2);
      ADD_FAILURE() << "parsed";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(e.message().find("weft/directory"), std::string::npos) << e.message();
    }
  }
}

}  // namespace
}  // namespace weft::core
