#include "transport/shm/cross_memory.h"

#include <sys/uio.h>

#include <cerrno>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "util/mutex.h"

namespace weft::transport {

int read_process_memory(pid_t pid, uint64_t remote, void* local, std::size_t bytes) {
  auto* target = static_cast<char*>(local);
  while (bytes > 0) {
    iovec mine{target, bytes};
    iovec theirs{reinterpret_cast<void*>(remote), bytes};
    ssize_t copied = process_vm_readv(pid, &mine, 1, &theirs, 1, 0);
    if (copied < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (copied == 0) return EFAULT;
    target += copied;
    remote += static_cast<uint64_t>(copied);
    bytes -= static_cast<std::size_t>(copied);
  }
  return 0;
}

namespace {

// A process's start time (clock ticks after boot, /proc/<pid>/stat's 22nd field), which with
// its pid names it for good; nullopt when it cannot be read (the process is gone).
std::optional<uint64_t> start_time_of(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  // The command name (2nd field) may hold spaces and parentheses: count from its last ')'.
  std::size_t name_end = stat.rfind(')');
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(name_end + 1));
  std::string field;
  for (int index = 3; index <= 22; ++index) {
    if (!(rest >> field)) return std::nullopt;
  }
  try {
    return std::stoull(field);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

struct ProbedProcess {
  pid_t pid;
  uint64_t start_time;
  bool operator==(const ProbedProcess&) const = default;
};

struct ProbedProcessHash {
  std::size_t operator()(const ProbedProcess& process) const {
    return std::hash<uint64_t>()(process.start_time * 1'000'003u +
                                 static_cast<uint64_t>(process.pid));
  }
};

// The kernel's answers so far, for the life of this process.
class ProbeAnswers {
 public:
  std::optional<int> find(const ProbedProcess& process) {
    util::MutexLock lock(mutex_);
    auto it = answers_.find(process);
    if (it == answers_.end()) return std::nullopt;
    return it->second;
  }
  void remember(const ProbedProcess& process, int answer) {
    util::MutexLock lock(mutex_);
    answers_[process] = answer;
  }

 private:
  util::Mutex mutex_;
  std::unordered_map<ProbedProcess, int, ProbedProcessHash> answers_ WEFT_GUARDED_BY(mutex_);
};

ProbeAnswers& probe_answers() {
  static ProbeAnswers* const answers = new ProbeAnswers();  // outlives every late caller
  return *answers;
}

int probe_now(pid_t pid, uint64_t remote, uint64_t expected) {
  uint64_t seen = 0;
  if (int error = read_process_memory(pid, remote, &seen, sizeof seen)) return error;
  return seen == expected ? 0 : EIO;
}

}  // namespace

int probe_process_memory(pid_t pid, uint64_t remote, uint64_t expected) {
  std::optional<uint64_t> started = start_time_of(pid);
  if (!started) return probe_now(pid, remote, expected);
  const ProbedProcess process{pid, *started};
  if (std::optional<int> known = probe_answers().find(process)) return *known;
  const int answer = probe_now(pid, remote, expected);
  if (answer == 0 || answer == EPERM) probe_answers().remember(process, answer);
  return answer;
}

}  // namespace weft::transport
