#include "api/op_log.h"

#include <bit>
#include <set>
#include <string>
#include <tuple>

#include "util/mutex.h"

namespace weft::api {

namespace {

// Sizes in powers of two: "up to 64 KiB" is one class, as the selector's thresholds are.
int size_class(int64_t bytes) {
  return bytes <= 0 ? 0 : std::bit_width(static_cast<uint64_t>(bytes - 1));
}

std::string size_class_text(int size_class) {
  uint64_t bound = size_class >= 63 ? ~uint64_t{0} : uint64_t{1} << size_class;
  if (bound >= (uint64_t{1} << 30)) return std::to_string(bound >> 30) + " GiB";
  if (bound >= (uint64_t{1} << 20)) return std::to_string(bound >> 20) + " MiB";
  if (bound >= (uint64_t{1} << 10)) return std::to_string(bound >> 10) + " KiB";
  return std::to_string(bound) + " B";
}

// True the first time this communicator chooses `algorithm` for `op` in `size_class`.
bool first_choice(const core::Communicator& comm, const char* op, int size_class,
                  const char* algorithm) {
  struct Seen {
    util::Mutex mutex;
    std::set<std::tuple<uint64_t, std::string, int, std::string>> choices WEFT_GUARDED_BY(mutex);
  };
  static Seen seen;
  util::MutexLock lock(seen.mutex);
  return seen.choices.emplace(comm.serial(), op, size_class, algorithm ? algorithm : "").second;
}

std::string describe(const CollectiveLaunch& launch, int64_t seq) {
  std::string text = std::string(launch.name) + " seq " + std::to_string(seq) + " " +
                     std::to_string(launch.bytes) + " B " +
                     std::string(name_of(launch.signature.dtype));
  if (launch.signature.root >= 0) text += " root " + std::to_string(launch.signature.root);
  if (launch.algorithm) text += " (" + std::string(launch.algorithm) + ")";
  return text;
}

}  // namespace

void log_op_start(const core::Communicator& comm, const CollectiveLaunch& launch, int64_t seq) {
  const int size = size_class(launch.bytes);
  if (launch.algorithm && first_choice(comm, launch.name, size, launch.algorithm)) {
    util::log_info(util::Subsys::kColl, [&] {
      return "group " + comm.name() + " (" + std::to_string(comm.size()) +
             " ranks): " + launch.name + " up to " + size_class_text(size) + " runs " +
             launch.algorithm;
    });
  }
  util::log_trace(util::Subsys::kColl, [&] { return "start " + describe(launch, seq); });
}

void log_op_end(const core::Communicator&, const CollectiveLaunch& launch, int64_t seq,
                const char* outcome) {
  util::log_trace(util::Subsys::kColl,
                  [&] { return std::string(outcome) + " " + describe(launch, seq); });
}

}  // namespace weft::api
