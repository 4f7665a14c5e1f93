// LocalWindow::open: member 0 makes the segment and publishes it in the store, the others map
// it, and every member waits for all to join (docs/design.md, "Same-host collectives").

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "transport/shm/cross_memory.h"
#include "transport/shm/local_window_internal.h"
#include "util/log.h"
#include "util/random_token.h"
#include "util/remote_barrier.h"
#include "weft/error.h"

namespace weft::transport {

using namespace window_internal;

namespace {

// The setup looks at the store after a pause that doubles from the first to the longest (each
// look is a request to the store's server: not every 10 ms from every rank of a large job).
constexpr auto kFirstSetupPause = std::chrono::microseconds(20);
constexpr auto kSetupCheckInterval = std::chrono::microseconds(100'000);

// The cores this process may run on (all online ones when the affinity is unknown).
cpu_set_t own_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    CPU_ZERO(&set);
    for (long c = 0; c < std::min<long>(sysconf(_SC_NPROCESSORS_ONLN), CPU_SETSIZE); ++c) {
      CPU_SET(c, &set);
    }
  }
  return set;
}

std::chrono::milliseconds time_left(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::milliseconds(1));
}

// Waits until the store has `keys`, looking at it with a growing pause rather than blocking in
// it, so that a failure of the group meanwhile ends the wait (a member that failed may never
// come). Not with timed waits: a torch store's client is left unusable by a wait that timed out.
void wait_for_keys(Store& store, const std::vector<std::string>& keys,
                   const LocalWindowOptions& options) {
  auto pause = kFirstSetupPause;
  while (!store.check(keys)) {
    if (options.interrupted && options.interrupted()) {
      throw Error(ErrorCode::kAborted,
                  "the group failed while its shared-memory window was set up");
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= options.deadline) {
      store.wait(keys, time_left(options.deadline));  // its timeout, naming what it waited for
      return;
    }
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(pause, options.deadline - now));
    pause = std::min<std::chrono::microseconds>(pause * 2, kSetupCheckInterval);
  }
}

}  // namespace

std::unique_ptr<LocalWindow> LocalWindow::open(const LocalWindowOptions& options) {
  std::size_t slot_bytes = round_up(std::max<std::size_t>(options.slot_bytes, kPage), kPage);
  std::size_t total = round_up(sizeof(Header), kPage) +
                      round_up(options.members * sizeof(Control), kPage) +
                      static_cast<std::size_t>(options.members) * 2 * slot_bytes;
  Store& store = *options.store;
  const std::string segment_key = options.key_prefix + "segment";
  std::string problem;
  SharedSegment segment;
  // Before any wait: a member that times out below names the ones that never came.
  store.set(options.key_prefix + "joined/" + std::to_string(options.rank), {});

  if (options.rank == 0) {
    try {
      segment = SharedSegment::create("weft-" + options.group_name, total);
      auto* header = new (segment.base()) Header{};
      header->magic = kMagic;
      header->members = static_cast<uint32_t>(options.members);
      header->slot_bytes = slot_bytes;
      std::string nonce = util::random_hex(16);
      std::memcpy(header->nonce, nonce.c_str(), nonce.size() + 1);
      for (int m = 0; m < options.members; ++m) {
        new (static_cast<uint8_t*>(segment.base()) + round_up(sizeof(Header), kPage) +
             m * sizeof(Control)) Control{};
      }
      store.set(segment_key,
                to_bytes(std::to_string(getpid()) + " " + std::to_string(segment.fd()) + " " +
                         std::to_string(total) + " " + header->nonce));
    } catch (const Error& e) {
      problem = e.message();
      store.set(segment_key, to_bytes("!" + problem));
    }
  } else {
    wait_for_keys(store, {segment_key}, options);
    std::string value = to_string(store.get(segment_key));
    if (!value.empty() && value[0] == '!') {
      problem = "rank 0 could not make the segment: " + value.substr(1);
    } else {
      long pid = 0, fd = -1;
      std::size_t bytes = 0;
      std::string nonce;
      std::istringstream(value) >> pid >> fd >> bytes >> nonce;
      try {
        if (bytes != total) {
          throw Error(ErrorCode::kInternal, "segment of " + std::to_string(bytes) +
                                                " bytes, expected " + std::to_string(total));
        }
        segment = SharedSegment::attach(static_cast<pid_t>(pid), static_cast<int>(fd), total);
        const Header& header = *static_cast<const Header*>(segment.base());
        if (RecordFault fault = check_window_header(header.magic, kMagic, header.members,
                                                    static_cast<uint32_t>(options.members),
                                                    header.slot_bytes, slot_bytes)) {
          throw Error(ErrorCode::kInternal,
                      "the segment does not describe this group: " + fault.to_string());
        }
        if (nonce != std::string(header.nonce, strnlen(header.nonce, sizeof header.nonce))) {
          throw Error(ErrorCode::kInternal, "the segment does not describe this group");
        }
      } catch (const Error& e) {
        problem = e.message();
      }
    }
  }

  std::unique_ptr<LocalWindow> window;
  if (problem.empty()) {
    window.reset(new LocalWindow(std::move(segment), options.rank, options.members, slot_bytes,
                                 options.spin_us, options.member_reads, options.slot_stores));
    Control& mine = window->control(options.rank);
    mine.pid = static_cast<int32_t>(getpid());
    mine.probe_word = static_cast<uint64_t>(mine.pid);
    mine.probe_address = reinterpret_cast<uintptr_t>(&mine.probe_word);
    mine.cores = own_cores();
    mine.remote_barriers = util::enable_remote_barriers();
  }
  // Every member says whether it is in; everybody uses the window only if all are.
  store.set(options.key_prefix + "ready/" + std::to_string(options.rank),
            to_bytes(problem.empty() ? "ok" : problem));
  std::vector<std::string> keys;
  for (int m = 0; m < options.members; ++m) {
    keys.push_back(options.key_prefix + "ready/" + std::to_string(m));
  }
  wait_for_keys(store, keys, options);
  std::vector<Bytes> answers = store.multi_get(keys);
  for (int m = 0; m < options.members; ++m) {
    std::string answer = to_string(answers[m]);
    if (answer != "ok") {
      util::log_info(util::Subsys::kShm, [&] {
        return "group '" + options.group_name + "': no shared memory (rank " + std::to_string(m) +
               ": " + answer + "); same-host collectives use TCP";
      });
      return nullptr;
    }
  }
  // Everyone has mapped it: the owner's descriptor has done its job.
  window->segment_.close_fd();
  for (int m = 0; m < options.members; ++m) {
    const int32_t pid = window->control(m).pid;  // read once: what is checked is what is watched
    if (RecordFault fault = check_member_pid(pid); fault && m != options.rank) {
      std::string text = "rank " + std::to_string(m) +
                         " published a control block in the group's shared-memory window that "
                         "no weft rank writes: " +
                         fault.to_string();
      window->poison(ErrorCode::kPeerFailure, text);
      throw Error(ErrorCode::kPeerFailure, text);
    }
    window->watches_.emplace_back(m == options.rank ? 0 : pid);
    window->pids_.push_back(pid);
  }
  window->choose_spin();
  window->choose_publishing();
  util::log_info(util::Subsys::kShm, [&] {
    return "group '" + options.group_name + "': shared-memory window, " +
           std::to_string(options.members) + " members, " + std::to_string(slot_bytes >> 10) +
           " KiB slots";
  });
  return window;
}

std::vector<int> LocalWindow::members_missing_from_setup(const LocalWindowOptions& options) {
  std::vector<int> missing;
  for (int m = 0; m < options.members; ++m) {
    if (!options.store->check({options.key_prefix + "joined/" + std::to_string(m)})) {
      missing.push_back(m);
    }
  }
  return missing;
}

}  // namespace weft::transport
