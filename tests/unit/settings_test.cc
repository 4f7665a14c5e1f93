#include "util/settings.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support/errors.h"
#include "util/network_settings.h"
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

// weft-model's syntax for the cost model's quantities.
TEST(Settings, TimesAndRatesTakeUnits) {
  EXPECT_EQ(util::parse_seconds("10us", "x"), 1e-5);
  EXPECT_EQ(util::parse_seconds("0.1ms", "x"), 0.1 / 1e3);
  EXPECT_EQ(util::parse_seconds("50ns", "x"), 50 / 1e9);
  EXPECT_EQ(util::parse_seconds("2e-5", "x"), 2e-5);
  EXPECT_EQ(util::parse_seconds("2e-5s", "x"), 2e-5);
  EXPECT_EQ(util::parse_seconds("0", "x"), 0.0);
  EXPECT_DOUBLE_EQ(util::parse_seconds_per_byte("10Gbit/s", "x"), 8 / 10e9);
  EXPECT_DOUBLE_EQ(util::parse_seconds_per_byte("100Gb/s", "x"), 8 / 100e9);
  EXPECT_DOUBLE_EQ(util::parse_seconds_per_byte("1.25GB/s", "x"), 1 / 1.25e9);
  EXPECT_DOUBLE_EQ(util::parse_seconds_per_byte("800MB/s", "x"), 1 / 800e6);
  EXPECT_DOUBLE_EQ(util::parse_seconds_per_byte("400Mbit/s", "x"), 8 / 400e6);
  EXPECT_EQ(util::parse_seconds_per_byte("8e-10", "x"), 8e-10);
  for (const char* bad : {"", "fast", "10 us", " 10us", "10usec", "-1us", "inf", "nan", "1e999"}) {
    Error error = error_of([&] { util::parse_seconds(bad, "WHAT"); });
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(error.message().find("WHAT='" + std::string(bad) + "' is malformed"),
              std::string::npos)
        << error.message();
  }
  for (const char* bad : {"", "10GiB/s", "10G", "0GB/s", "-1GB/s", "10 GB/s", "1e-320GB/s"}) {
    Error error = error_of([&] { util::parse_seconds_per_byte(bad, "WHAT"); });
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(error.message().find("WHAT='" + std::string(bad) + "' is malformed"),
              std::string::npos)
        << error.message();
  }
}

TEST(Settings, TheNetworkIsWhatWeftNetSays) {
  for (const char* name :
       {"WEFT_NET_ALPHA", "WEFT_NET_BETA", "WEFT_NET_GAMMA", "WEFT_SHM_ALPHA", "WEFT_SHM_BETA"}) {
    unsetenv(name);
  }
  EXPECT_FALSE(util::read_network_settings().any());
  EXPECT_EQ(util::describe(util::read_network_settings()), "");
  {
    ScopedEnv alpha("WEFT_NET_ALPHA", "5us");
    util::NetworkSettings given = util::read_network_settings();
    EXPECT_EQ(given.alpha_s, 5e-6);
    EXPECT_FALSE(given.beta_s_per_byte);
    EXPECT_FALSE(given.gamma_s_per_byte);
    ScopedEnv beta("WEFT_NET_BETA", "100Gbit/s");
    ScopedEnv gamma("WEFT_NET_GAMMA", "8GB/s");
    given = util::read_network_settings();
    EXPECT_DOUBLE_EQ(*given.beta_s_per_byte, 8 / 100e9);
    EXPECT_DOUBLE_EQ(*given.gamma_s_per_byte, 1 / 8e9);
    EXPECT_EQ(util::describe(given),
              "alpha 5 us, beta 0.08 ns/B (12.5 GB/s), gamma 0.125 ns/B (8 GB/s)");
  }
  {
    ScopedEnv shm_alpha("WEFT_SHM_ALPHA", "2us");
    ScopedEnv shm_beta("WEFT_SHM_BETA", "10GB/s");
    util::NetworkSettings given = util::read_network_settings();
    EXPECT_TRUE(given.any());
    EXPECT_FALSE(given.alpha_s);
    EXPECT_EQ(given.shm_alpha_s, 2e-6);
    EXPECT_DOUBLE_EQ(*given.shm_beta_s_per_byte, 1 / 10e9);
    EXPECT_EQ(util::describe(given), "shm alpha 2 us, shm beta 0.1 ns/B (10 GB/s)");
  }
  EXPECT_FALSE(util::read_network_settings().any());
}

// A malformed value, and one no network has (most likely a unit left out), name the variable.
TEST(Settings, AWrongNetworkNumberIsAnErrorNamingTheVariable) {
  const struct {
    const char* name;
    const char* value;
    const char* message;
  } cases[] = {
      {"WEFT_NET_ALPHA", "10usec", "WEFT_NET_ALPHA='10usec' is malformed: expected a time"},
      {"WEFT_NET_ALPHA", "10",
       "WEFT_NET_ALPHA='10' reads as 10 s per message, beyond any network: give a unit, e.g. "
       "10us"},
      {"WEFT_NET_BETA", "10Gbps", "WEFT_NET_BETA='10Gbps' is malformed: expected a rate"},
      {"WEFT_NET_BETA", "10", "WEFT_NET_BETA='10' reads as 10 s per byte, beyond any network"},
      {"WEFT_NET_BETA", "100kB/s", "WEFT_NET_BETA='100kB/s' is malformed"},
      {"WEFT_NET_GAMMA", "0.5MB/s", "WEFT_NET_GAMMA='0.5MB/s' reads as 2e-06 s per byte"},
      {"WEFT_NET_GAMMA", "0GB/s", "WEFT_NET_GAMMA='0GB/s' is malformed"},
      {"WEFT_SHM_ALPHA", "3",
       "WEFT_SHM_ALPHA='3' reads as 3 s per phase, beyond any shared memory: give a unit, e.g. "
       "3us"},
      {"WEFT_SHM_BETA", "4GBs", "WEFT_SHM_BETA='4GBs' is malformed: expected a rate"},
      {"WEFT_SHM_BETA", "0.1MB/s",
       "WEFT_SHM_BETA='0.1MB/s' reads as 1e-05 s per byte, beyond any shared memory"},
  };
  for (const auto& c : cases) {
    ScopedEnv variable(c.name, c.value);
    Error error = error_of([] { util::read_network_settings(); });
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << c.value;
    EXPECT_NE(error.message().find(c.message), std::string::npos) << error.message();
  }
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
