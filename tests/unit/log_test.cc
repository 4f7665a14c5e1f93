#include "util/log.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/errors.h"
#include "support/temp_paths.h"
#include "util/log_startup.h"
#include "weft/error.h"
#include "weft/log.h"

namespace weft {
namespace {

using testing::error_of;
using util::Subsys;

// Sets environment variables for one test and re-reads the log settings, then restores both.
class ScopedLogEnv {
 public:
  explicit ScopedLogEnv(std::vector<std::pair<std::string, std::string>> values) {
    for (auto& [name, value] : values) {
      const char* old = std::getenv(name.c_str());
      saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
      setenv(name.c_str(), value.c_str(), 1);
    }
    util::reload_log_settings();
  }
  ~ScopedLogEnv() {
    for (auto& [name, old] : saved_) {
      if (old)
        setenv(name.c_str(), old->c_str(), 1);
      else
        unsetenv(name.c_str());
    }
    util::reload_log_settings();
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

struct Captured {
  LogLevel level;
  std::string subsystem;
  std::string line;
};

// Installs a sink that records every line; removes it on destruction.
class CapturingSink {
 public:
  CapturingSink() {
    set_log_sink([this](LogLevel level, std::string_view subsystem, std::string_view line) {
      lines.push_back({level, std::string(subsystem), std::string(line)});
    });
  }
  ~CapturingSink() { set_log_sink(nullptr); }
  std::vector<Captured> lines;
};

TEST(Log, LevelFromEnvironmentEnablesItselfAndTheLevelsBefore) {
  ScopedLogEnv env({{"WEFT_DEBUG", "info"}, {"WEFT_DEBUG_SUBSYS", ""}});
  EXPECT_EQ(log_level(), LogLevel::kInfo);
  EXPECT_TRUE(util::log_enabled(LogLevel::kError, Subsys::kInit));
  EXPECT_TRUE(util::log_enabled(LogLevel::kInfo, Subsys::kTransport));
  EXPECT_FALSE(util::log_enabled(LogLevel::kDebug, Subsys::kTransport));
  EXPECT_FALSE(util::log_enabled(LogLevel::kTrace, Subsys::kColl));
}

TEST(Log, SetLogLevelOverridesTheEnvironmentButKeepsTheSubsystems) {
  ScopedLogEnv env({{"WEFT_DEBUG", "warn"}, {"WEFT_DEBUG_SUBSYS", "coll"}});
  set_log_level(LogLevel::kTrace);
  EXPECT_TRUE(util::log_enabled(LogLevel::kTrace, Subsys::kColl));
  EXPECT_FALSE(util::log_enabled(LogLevel::kError, Subsys::kShm));
  set_log_level(LogLevel::kError);
  EXPECT_FALSE(util::log_enabled(LogLevel::kWarn, Subsys::kColl));
}

TEST(Log, SubsystemListsIncludeOrExclude) {
  EXPECT_EQ(util::parse_subsys_list(""), util::kAllSubsys);
  EXPECT_EQ(util::parse_subsys_list("all"), util::kAllSubsys);
  EXPECT_EQ(util::parse_subsys_list("init,coll"), (1u << 0) | (1u << 2));
  EXPECT_EQ(util::parse_subsys_list("^shm,store"), util::kAllSubsys & ~((1u << 3) | (1u << 4)));
  EXPECT_EQ(util::parse_subsys_list("python"), 1u << 5);
  Error unknown = error_of([] { util::parse_subsys_list("init,net"); });
  EXPECT_EQ(unknown.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(unknown.what()).find("'net'"), std::string::npos) << unknown.what();
}

TEST(Log, SubsystemFilterFromEnvironment) {
  ScopedLogEnv env({{"WEFT_DEBUG", "trace"}, {"WEFT_DEBUG_SUBSYS", "^coll"}});
  EXPECT_FALSE(util::log_enabled(LogLevel::kError, Subsys::kColl));
  EXPECT_TRUE(util::log_enabled(LogLevel::kTrace, Subsys::kInit));
  EXPECT_TRUE(util::log_enabled(LogLevel::kTrace, Subsys::kTransport));
}

TEST(Log, AMalformedSubsystemListLogsEverySubsystem) {
  ScopedLogEnv env({{"WEFT_DEBUG", "info"}, {"WEFT_DEBUG_SUBSYS", "bogus"}});
  EXPECT_TRUE(util::log_enabled(LogLevel::kInfo, Subsys::kStore));
}

TEST(Log, FileNamesExpandHostPidAndRank) {
  EXPECT_EQ(util::expand_log_path("/tmp/w.%h.%p.%r", "node7", 42, 3), "/tmp/w.node7.42.3");
  EXPECT_EQ(util::expand_log_path("/tmp/w.%r", "node7", 42, -1), "/tmp/w.unknown");
  EXPECT_EQ(util::expand_log_path("/tmp/100%%-%x%", "h", 1, 0), "/tmp/100%-%x%");
  EXPECT_EQ(util::expand_log_path("plain", "h", 1, 0), "plain");
}

TEST(Log, ThePrefixNamesLevelTimeHostPidRankGroupAndSubsystem) {
  util::LogOrigin origin{.host = "node7", .pid = 4242, .rank = 3, .group = "default"};
  std::string line = util::format_log_line(LogLevel::kInfo, Subsys::kTransport, origin,
                                           std::chrono::system_clock::now(), "hello");
  EXPECT_TRUE(std::regex_match(
      line, std::regex(R"(\[weft INFO \d\d:\d\d:\d\d\.\d\d\d node7:4242 rank 3 group default )"
                       R"(transport\] hello)")))
      << line;

  util::LogOrigin early{.host = "node7", .pid = 4242};
  line = util::format_log_line(LogLevel::kTrace, Subsys::kInit, early,
                               std::chrono::system_clock::now(), "early");
  EXPECT_TRUE(std::regex_match(
      line, std::regex(R"(\[weft TRACE \d\d:\d\d:\d\d\.\d\d\d node7:4242 init\] early)")))
      << line;
}

TEST(Log, TheSinkReceivesEnabledLinesWithTheirPrefix) {
  ScopedLogEnv env({{"WEFT_DEBUG", "info"}, {"WEFT_DEBUG_SUBSYS", ""}});
  util::set_log_rank(5);
  util::set_log_group("trainers");
  int built = 0;
  {
    CapturingSink sink;
    util::log_info(Subsys::kColl, [&] {
      ++built;
      return std::string("all_reduce chose ring");
    });
    util::log_debug(Subsys::kColl, [&] {
      ++built;
      return std::string("filtered out");
    });
    log_message(LogLevel::kWarn, "python", "from the bindings");
    ASSERT_EQ(sink.lines.size(), 2u);
    EXPECT_EQ(sink.lines[0].level, LogLevel::kInfo);
    EXPECT_EQ(sink.lines[0].subsystem, "coll");
    EXPECT_NE(sink.lines[0].line.find(":" + std::to_string(getpid()) +
                                      " rank 5 group trainers coll] all_reduce chose ring"),
              std::string::npos)
        << sink.lines[0].line;
    EXPECT_EQ(sink.lines[0].line.back(), 'g') << "no newline in a sink's line";
    EXPECT_EQ(sink.lines[1].subsystem, "python");
    EXPECT_EQ(sink.lines[1].level, LogLevel::kWarn);
  }
  EXPECT_EQ(built, 1) << "a disabled line's message must not be built";
  EXPECT_EQ(error_of([] { log_message(LogLevel::kInfo, "net", "x"); }).code(),
            ErrorCode::kInvalidArgument);
  util::set_log_rank(-1);
  util::set_log_group("");
}

TEST(Log, SinkCallsAreOneAtATimeFromAnyThread) {
  ScopedLogEnv env({{"WEFT_DEBUG", "info"}, {"WEFT_DEBUG_SUBSYS", ""}});
  std::atomic<int> inside{0};
  std::atomic<int> most_inside{0};
  std::atomic<int> calls{0};
  set_log_sink([&](LogLevel, std::string_view, std::string_view) {
    int now = ++inside;
    most_inside = std::max(most_inside.load(), now);
    std::this_thread::yield();
    ++calls;
    --inside;
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 200; ++i) {
        util::log_info(Subsys::kTransport, [] { return std::string("line"); });
      }
    });
  }
  for (auto& thread : threads) thread.join();
  set_log_sink(nullptr);
  EXPECT_EQ(calls.load(), 800);
  EXPECT_EQ(most_inside.load(), 1);
}

TEST(Log, ASinkCannotReplaceItselfAndWhatItLogsGoesToStderr) {
  ScopedLogEnv env({{"WEFT_DEBUG", "info"}, {"WEFT_DEBUG_SUBSYS", ""}});
  bool refused = false;
  int calls = 0;
  set_log_sink([&](LogLevel, std::string_view, std::string_view) {
    ++calls;
    try {
      set_log_sink(nullptr);
    } catch (const Error& e) {
      refused = e.code() == ErrorCode::kInvalidArgument;
    }
    util::log_info(Subsys::kInit, [] { return std::string("from inside the sink"); });
  });
  ::testing::internal::CaptureStderr();
  util::log_info(Subsys::kInit, [] { return std::string("outside"); });
  std::string err = ::testing::internal::GetCapturedStderr();
  set_log_sink(nullptr);
  EXPECT_TRUE(refused);
  EXPECT_EQ(calls, 1);
  EXPECT_NE(err.find("init] from inside the sink"), std::string::npos) << err;
}

TEST(Log, WithoutASinkLinesGoToStderr) {
  ScopedLogEnv env({{"WEFT_DEBUG", "warn"}, {"WEFT_DEBUG_SUBSYS", ""}});
  ::testing::internal::CaptureStderr();
  util::log_warn(Subsys::kStore, [] { return std::string("to stderr"); });
  util::log_info(Subsys::kStore, [] { return std::string("not shown"); });
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(
      std::regex_search(err, std::regex(R"(^\[weft WARN [0-9:.]+ [^ ]+:\d+ store\] to stderr\n$)")))
      << err;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Log, AFilePerRankOpensOnceTheRankIsKnown) {
  testing::TempDir dir("log");
  std::string pattern = (dir.path() / "weft.%h.%r.log").string();
  ScopedLogEnv env(
      {{"WEFT_DEBUG", "info"}, {"WEFT_DEBUG_SUBSYS", ""}, {"WEFT_DEBUG_FILE", pattern}});
  util::set_log_rank(-1);
  ::testing::internal::CaptureStderr();
  util::log_info(Subsys::kInit, [] { return std::string("before the rank"); });
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("before the rank"), std::string::npos) << err;

  util::set_log_rank(7);
  util::log_info(Subsys::kInit, [] { return std::string("rank 7 speaking"); });
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string text = read_file(dir.path() / ("weft." + std::string(host) + ".7.log"));
  EXPECT_NE(text.find(" rank 7 init] rank 7 speaking\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("before the rank"), std::string::npos) << text;
  util::set_log_rank(-1);
}

TEST(Log, StartupDescribesTheSettingsSetAndHidesTheJobToken) {
  ScopedLogEnv env({{"WEFT_JOB_TOKEN", "s3cret"}, {"WEFT_TRANSPORT", "tcp"}, {"WEFT_TYPO", "1"}});
  std::string settings = util::describe_settings_in_environment();
  EXPECT_NE(settings.find("WEFT_TRANSPORT=tcp"), std::string::npos) << settings;
  EXPECT_NE(settings.find("WEFT_JOB_TOKEN=(hidden)"), std::string::npos) << settings;
  EXPECT_EQ(settings.find("s3cret"), std::string::npos) << settings;
  EXPECT_NE(util::unknown_weft_variables().find("WEFT_TYPO"), std::string::npos);
}

}  // namespace
}  // namespace weft
