#include "core/flight_dump.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <mutex>

#include "core/op_record_text.h"
#include "util/log.h"
#include "util/mutex.h"
#include "util/settings.h"

namespace weft::core {

namespace {

// Groups alive at once in one process; more are recorded but left out of dumps.
constexpr int kMaxRecorders = 256;
constexpr std::size_t kGroupNameRoom = 64;
// The most records of one group a dump writes (the ring may be longer; a dump of the last
// ones says where the rank was). Bounded so that the signal handler's stack buffer is.
constexpr std::size_t kMaxDumpedRecords = 256;

struct Slot {
  // 0 free, 1 being filled, 2 in use: the signal handler reads only slots in use.
  std::atomic<int> state{0};
  std::atomic<const FlightRecorder*> recorder{nullptr};
  int world_rank = -1;
  char group[kGroupNameRoom] = {};
};

Slot slots[kMaxRecorders];

// WEFT_FLIGHT_DIR as the signal handler needs it: copied once, never freed.
char flight_dir[512] = {};
std::once_flag handler_once;

// Concatenates into a path buffer.
void make_path(char* path, std::size_t room, const char* dir, const char* prefix, int world_rank) {
  TextBuffer out(path, room - 1);
  out.text(dir).text("/").text(prefix).number(world_rank).text(".txt");
  path[out.size()] = '\0';
}

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

// The signals weftrun forwards to stop a job.
constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGHUP};
// The action each had before ours, by its place in kStopSignals: a program's own handler (an
// interpreter's, such as Python's SIGINT handler) runs after the dump.
struct sigaction previous_actions[std::size(kStopSignals)];

const struct sigaction* previous_action_of(int signo) {
  for (std::size_t i = 0; i < std::size(kStopSignals); ++i) {
    if (kStopSignals[i] == signo) return &previous_actions[i];
  }
  return nullptr;
}

void dump_every_rank(int signo) {
  // Each world rank of this process once (a real rank has one; in-process tests have several).
  int done[kMaxRecorders];
  int done_count = 0;
  for (Slot& slot : slots) {
    if (slot.state.load(std::memory_order_acquire) != 2) continue;
    bool seen = false;
    for (int i = 0; i < done_count; ++i) seen = seen || done[i] == slot.world_rank;
    if (seen) continue;
    done[done_count++] = slot.world_rank;
    const char* reason = signo == SIGINT   ? "stopped by SIGINT"
                         : signo == SIGHUP ? "stopped by SIGHUP"
                                           : "stopped by SIGTERM";
    // Its own temporary file: the signal may interrupt a thread writing the dump.
    write_flight_file(flight_dir, "rank", slot.world_rank, reason, ".signal.tmp");
  }
}

void on_termination_signal(int signo, siginfo_t* info, void* context) {
  int saved_errno = errno;
  dump_every_rank(signo);
  errno = saved_errno;
  const struct sigaction* previous = previous_action_of(signo);
  if (previous != nullptr && (previous->sa_flags & SA_SIGINFO) != 0) {
    previous->sa_sigaction(signo, info, context);
  } else if (previous != nullptr && previous->sa_handler != SIG_DFL &&
             previous->sa_handler != SIG_IGN) {
    previous->sa_handler(signo);
  } else {
    // The default action: put it back and let the signal end the process as it would have.
    ::signal(signo, SIG_DFL);
    ::raise(signo);
  }
}

void install_signal_handler(const std::string& dir) {
  std::strncpy(flight_dir, dir.c_str(), sizeof flight_dir - 1);
  for (std::size_t i = 0; i < std::size(kStopSignals); ++i) {
    int signo = kStopSignals[i];
    struct sigaction current {};
    if (::sigaction(signo, nullptr, &current) != 0) continue;
    // An ignored signal stops nothing: nothing to dump.
    if ((current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_IGN) continue;
    previous_actions[i] = current;
    struct sigaction action {};
    action.sa_sigaction = on_termination_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_SIGINFO | (current.sa_flags & SA_RESTART);
    ::sigaction(signo, &action, nullptr);
  }
}

}  // namespace

void register_flight_recorder(const FlightRecorder* recorder, const std::string& group,
                              int world_rank) {
  if (!recorder->enabled()) return;
  std::string dir = util::setting_string("WEFT_FLIGHT_DIR");
  if (!dir.empty()) std::call_once(handler_once, install_signal_handler, dir);
  for (Slot& slot : slots) {
    int free = 0;
    if (!slot.state.compare_exchange_strong(free, 1)) continue;
    slot.world_rank = world_rank;
    std::strncpy(slot.group, group.c_str(), kGroupNameRoom - 1);
    slot.group[kGroupNameRoom - 1] = '\0';
    slot.recorder.store(recorder);
    slot.state.store(2, std::memory_order_release);
    return;
  }
}

void unregister_flight_recorder(const FlightRecorder* recorder) {
  for (Slot& slot : slots) {
    if (slot.state.load() == 2 && slot.recorder.load() == recorder) {
      slot.recorder.store(nullptr);
      slot.state.store(0, std::memory_order_release);
      return;
    }
  }
}

void write_flight_file(const char* dir, const char* prefix, int world_rank, const char* reason,
                       const char* temporary_suffix) {
  if (dir == nullptr || dir[0] == '\0') return;
  char path[640];
  make_path(path, sizeof path, dir, prefix, world_rank);
  // A dump replaces an older one: the newest says where the rank is now.
  char temporary[660];
  TextBuffer temporary_path(temporary, sizeof temporary - 1);
  temporary_path.text(path).text(temporary_suffix);
  temporary[temporary_path.size()] = '\0';
  int fd = ::open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  char line[512];
  TextBuffer header(line, sizeof line - 1);
  header.text("# weft flight recorder of rank ").number(world_rank).text(": ").text(reason);
  line[header.size()] = '\n';
  write_all(fd, line, header.size() + 1);
  int64_t now = steady_now_ns();
  OpRecord records[kMaxDumpedRecords];
  for (Slot& slot : slots) {
    if (slot.state.load(std::memory_order_acquire) != 2 || slot.world_rank != world_rank) continue;
    const FlightRecorder* recorder = slot.recorder.load();
    if (recorder == nullptr) continue;
    std::size_t count = recorder->copy_to(records, kMaxDumpedRecords);
    for (std::size_t i = 0; i < count; ++i) {
      TextBuffer out(line, sizeof line - 1);
      format_op_record(out, records[i], slot.group, world_rank, now);
      line[out.size()] = '\n';
      write_all(fd, line, out.size() + 1);
    }
  }
  ::close(fd);
  // Readers see the old dump or the new one, never half of one.
  ::rename(temporary, path);
}

void log_flight_recorder(const std::vector<OpRecord>& records, const std::string& group, int rank,
                         int world_rank, const Error& cause) {
  util::log_error(util::Subsys::kColl, [&] {
    return "flight recorder of group '" + group + "' rank " + std::to_string(rank) + ": " +
           std::to_string(records.size()) + " last ops, newest last (after: " + cause.what() + ")";
  });
  int64_t now = steady_now_ns();
  for (const OpRecord& record : records) {
    char line[512];
    TextBuffer out(line, sizeof line);
    format_op_record(out, record, group.c_str(), world_rank, now);
    util::log_error(util::Subsys::kColl,
                    [&] { return "flight " + std::string(out.data(), out.size()); });
  }
}

void write_flight_files(int world_rank, const Error& cause, const std::string& group) {
  std::string reason =
      std::string("after ") + to_string(cause.code()) + " in group '" + group + "'";
  // A failure reaches a rank on several threads at once (its caller's, the transport's).
  static util::Mutex writing;
  util::MutexLock lock(writing);
  write_flight_file(util::setting_string("WEFT_FLIGHT_DIR").c_str(), "rank", world_rank,
                    reason.c_str(), ".tmp");
  write_flight_file(util::setting_string("WEFT_TRACE").c_str(), "flight_rank", world_rank,
                    reason.c_str(), ".tmp");
}

}  // namespace weft::core
