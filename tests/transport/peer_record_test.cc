// The store value a rank publishes about itself (core/peer_record.h) and the TCP path's card in
// it (transport/tcp/tcp_path_kind.h): encoded and parsed back, and values that are not records.
#include "core/peer_record.h"

#include <gtest/gtest.h>

#include "support/errors.h"
#include "transport/tcp/tcp_path_kind.h"
#include "weft/error.h"

namespace weft::core {
namespace {

TEST(PeerRecord, EncodesTheHostAndEveryPathsCardAndParsesThemBack) {
  PeerRecord record;
  record.host = "node7|boot-id|4026531992";
  record.cards["tcp"] = "10.0.0.1:4000,[fd00::1]:4000";
  record.cards["shm"] = "shm:4242:17:140000000";
  std::string value = encode_peer_record(record);
  EXPECT_EQ(
      value,
      "node7|boot-id|4026531992\nshm=shm:4242:17:140000000\ntcp=10.0.0.1:4000,[fd00::1]:4000");
  PeerRecord parsed = parse_peer_record(value, 3);
  EXPECT_EQ(parsed.host, record.host);
  EXPECT_EQ(parsed.cards, record.cards);
  EXPECT_EQ(parsed.card("shm"), "shm:4242:17:140000000");
  EXPECT_EQ(parsed.card("ofi"), std::nullopt);
}

TEST(PeerRecord, ARecordWithoutCardsOrHostParses) {
  PeerRecord parsed = parse_peer_record("", 0);
  EXPECT_EQ(parsed.host, "");
  EXPECT_TRUE(parsed.cards.empty());
  EXPECT_EQ(parse_peer_record("host", 0).host, "host");
  // A card may hold '=' itself: only the first one ends the kind's name.
  EXPECT_EQ(parse_peer_record("h\nx=a=b", 0).card("x"), "a=b");
}

TEST(PeerRecord, AValueThatIsNotARecordIsAnErrorNamingTheRank) {
  for (const std::string& value : {std::string("host\n127.0.0.1:1"), std::string("host\n=card"),
                                   std::string("host\ntcp=a\ntcp=b")}) {
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

TEST(TcpAddressCard, EncodesEveryAddressBestFirstAndParsesThemBack) {
  std::vector<util::SocketAddress> addresses = {util::resolve("10.0.0.1", 4000),
                                                util::resolve("fd00::1", 4000),
                                                util::resolve("127.0.0.1", 4000)};
  std::string card = transport::encode_address_card(addresses);
  EXPECT_EQ(card, "10.0.0.1:4000,[fd00::1]:4000,127.0.0.1:4000");
  std::vector<util::SocketAddress> parsed = transport::parse_address_card(card, 3);
  ASSERT_EQ(parsed.size(), 3u);
  EXPECT_EQ(parsed[1].to_string(), "[fd00::1]:4000");
  ASSERT_EQ(transport::parse_address_card("[::1]:29500", 0).size(), 1u);
}

TEST(TcpAddressCard, ACardThatIsNotAnAddressListIsAnErrorNamingTheRank) {
  for (const std::string& card : {std::string(""), std::string(","), std::string("10.0.0.1"),
                                  std::string("10.0.0.1:4000,[fd00::1")}) {
    SCOPED_TRACE(card);
    try {
      transport::parse_address_card(card, 5);
      ADD_FAILURE() << "parsed";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(e.message().find("rank 5"), std::string::npos) << e.message();
    }
  }
}

}  // namespace
}  // namespace weft::core
