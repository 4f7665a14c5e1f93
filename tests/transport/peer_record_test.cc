// The store value a rank publishes about itself (core/peer_record.h): encoded and parsed back,
// the older one-address form, and values that are not records.
#include "core/peer_record.h"

#include <gtest/gtest.h>

#include "support/errors.h"
#include "weft/error.h"

namespace weft::core {
namespace {

TEST(PeerRecord, EncodesEveryAddressHostAndMailboxAndParsesThemBack) {
  PeerRecord record;
  record.addresses = {util::resolve("10.0.0.1", 4000), util::resolve("fd00::1", 4000),
                      util::resolve("127.0.0.1", 4000)};
  record.host = "node7|boot-id|4026531992";
  record.mailbox = "shm:4242:17:140000000";
  std::string value = encode_peer_record(record);
  EXPECT_EQ(value,
            "10.0.0.1:4000,[fd00::1]:4000,127.0.0.1:4000\nnode7|boot-id|4026531992\n"
            "shm:4242:17:140000000");
  PeerRecord parsed = parse_peer_record(value, 3);
  ASSERT_EQ(parsed.addresses.size(), 3u);
  EXPECT_EQ(parsed.addresses[1].to_string(), "[fd00::1]:4000");
  EXPECT_EQ(parsed.host, record.host);
  EXPECT_EQ(parsed.mailbox, record.mailbox);
}

TEST(PeerRecord, ARecordWithoutMailboxOrHostParses) {
  PeerRecord parsed = parse_peer_record("[::1]:29500\n", 0);
  ASSERT_EQ(parsed.addresses.size(), 1u);
  EXPECT_EQ(parsed.addresses[0].to_string(), "[::1]:29500");
  EXPECT_EQ(parsed.host, "");
  EXPECT_EQ(parsed.mailbox, "");
  EXPECT_EQ(parse_peer_record("127.0.0.1:1", 0).addresses.size(), 1u);
}

TEST(PeerRecord, AValueThatIsNotARecordIsAnErrorNamingTheRank) {
  for (const std::string& value :
       {std::string(""), std::string("\nhost"), std::string("10.0.0.1\nhost"),
        std::string("10.0.0.1:4000,[fd00::1\nhost")}) {
    SCOPED_TRACE(value);
    try {
      parse_peer_record(value, 5);
      ADD_FAILURE() << "parsed";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(e.message().find("rank 5"), std::string::npos) << e.message();
    }
  }
}

}  // namespace
}  // namespace weft::core
