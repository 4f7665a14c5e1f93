#include "util/settings.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support/errors.h"
#include "weft/error.h"

namespace weft {
namespace {

using testing::error_of;

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty())
      unsetenv(name_);
    else
      setenv(name_, old_.c_str(), 1);
  }

 private:
  const char* name_;
  std::string old_;
};

TEST(Settings, DefaultsApplyWhenUnset) {
  unsetenv("WEFT_TIMEOUT");
  EXPECT_EQ(util::setting_duration("WEFT_TIMEOUT"), std::chrono::seconds(300));
}

TEST(Settings, DurationsTakeUnits) {
  EXPECT_EQ(util::parse_duration("30", "x"), std::chrono::seconds(30));
  EXPECT_EQ(util::parse_duration("1.5s", "x"), std::chrono::milliseconds(1500));
  EXPECT_EQ(util::parse_duration("250ms", "x"), std::chrono::milliseconds(250));
  EXPECT_EQ(util::parse_duration("2m", "x"), std::chrono::minutes(2));
}

TEST(Settings, AMalformedValueIsAnErrorNamingTheVariable) {
  ScopedEnv timeout("WEFT_TIMEOUT", "soon");
  Error error = error_of([&] { util::setting_duration("WEFT_TIMEOUT"); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("WEFT_TIMEOUT='soon'"), std::string::npos)
      << error.what();
  ScopedEnv spin("WEFT_SPIN_US", "12x");
  EXPECT_THROW(util::setting_int("WEFT_SPIN_US"), Error);
  ScopedEnv transport("WEFT_TRANSPORT", "carrier-pigeon");
  EXPECT_THROW(util::setting_choice("WEFT_TRANSPORT"), Error);
}

TEST(Settings, AnUndeclaredNameIsABug) {
  Error error = error_of([&] { util::setting_string("WEFT_NOT_A_SETTING"); });
  EXPECT_EQ(error.code(), ErrorCode::kInternal);
}

TEST(Settings, EverySettingIsDocumentedInDocsEnv) {
  std::ifstream doc(WEFT_SOURCE_DIR "/docs/env.md");
  ASSERT_TRUE(doc.good()) << "docs/env.md is missing";
  std::stringstream text;
  text << doc.rdbuf();
  for (const auto& spec : util::all_settings()) {
    EXPECT_NE(text.str().find("`" + std::string(spec.name) + "`"), std::string::npos)
        << spec.name << " is not documented in docs/env.md";
  }
}

}  // namespace
}  // namespace weft
