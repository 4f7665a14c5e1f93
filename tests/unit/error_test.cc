#include "weft/error.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(Error, RendersCodeMessageAndContextOnOneLine) {
  ErrorContext context;
  context.group = "default";
  context.rank = 1;
  context.size = 4;
  context.op = "recv";
  context.peer = 0;
  context.peer_address = "10.0.0.1:4242";
  context.bytes = 1024;
  Error error(ErrorCode::kTimeout, "no message from rank 0", context);
  EXPECT_STREQ(error.what(),
               "weft timeout: no message from rank 0 [group=default rank=1/4 op=recv "
               "peer=0@10.0.0.1:4242 bytes=1024]");
  EXPECT_EQ(error.code(), ErrorCode::kTimeout);
}

TEST(Error, EmptyContextRendersNothing) {
  Error error(ErrorCode::kInvalidArgument, "bad");
  EXPECT_STREQ(error.what(), "weft invalid_argument: bad");
}

TEST(Error, DerivedErrorsKeepTheRootCause) {
  auto root = std::make_shared<const Error>(ErrorCode::kPeerFailure, "rank 2 died");
  Error derived(ErrorCode::kAborted, "group aborted", {}, root);
  Error twice(ErrorCode::kAborted, "again", {}, std::make_shared<const Error>(derived));
  EXPECT_EQ(twice.root_cause().message(), "rank 2 died");
  EXPECT_NE(std::string(derived.what()).find("root cause: weft peer_failure: rank 2 died"),
            std::string::npos);
}

TEST(Error, WithContextFillsOnlyEmptyFields) {
  ErrorContext inner;
  inner.peer = 3;
  Error error(ErrorCode::kPeerFailure, "gone", inner);
  ErrorContext outer;
  outer.group = "g";
  outer.rank = 0;
  outer.size = 2;
  outer.peer = 1;
  Error merged = error.with_context(outer);
  EXPECT_EQ(merged.context().peer, 3);
  EXPECT_EQ(merged.context().group, "g");
}

}  // namespace
}  // namespace weft
