// One rank of a shrink or abort scenario (tests/multiproc/shrink_test.cc starts it).
// Usage: weft_test_shrink_rank SCENARIO, with RANK, WORLD_SIZE and WEFT_STORE_ADDR set, and:
//   VICTIMS     ranks that SIGKILL themselves before all_reduce number KILL_AT (kill_then_shrink)
//   LATE        the rank that calls shrink only after the others' timeout (late_member)
//   SHRINK_MS   the timeout given to shrink (late_member)
// Prints lines the test reads: "SHRUNK <ms> rank=<new rank> size=<new size>", then
// "RESULT ok ..." and exits 0 when everything it checked held; "RESULT <what went wrong>" and
// exits 1 otherwise.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "weft/weft.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kCount = 1000;
constexpr int kKillAt = 20;

long ms_since(Clock::time_point since) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count());
}

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value ? std::atoi(value) : fallback;
}

std::vector<int> env_ranks(const char* name) {
  std::vector<int> ranks;
  std::istringstream text(std::getenv(name) ? std::getenv(name) : "");
  std::string item;
  while (std::getline(text, item, ',')) {
    if (!item.empty()) ranks.push_back(std::stoi(item));
  }
  return ranks;
}

// What rank `rank` contributes to all_reduce number `round`: every rank can compute anyone's.
int32_t value(int rank, int round, std::size_t i) {
  return (rank + 1) * 1000 + round * 7 + static_cast<int32_t>(i % 13);
}

std::vector<int32_t> contribution(int rank, int round) {
  std::vector<int32_t> data(kCount);
  for (std::size_t i = 0; i < kCount; ++i) data[i] = value(rank, round, i);
  return data;
}

// The sum a plain loop gives over the contributions of `ranks` (original ranks).
std::vector<int32_t> expected_sum(const std::vector<int>& ranks, int round) {
  std::vector<int32_t> sum(kCount, 0);
  for (int rank : ranks) {
    for (std::size_t i = 0; i < kCount; ++i) sum[i] += value(rank, round, i);
  }
  return sum;
}

int fail(const std::string& what) {
  std::printf("RESULT %s\n", what.c_str());
  std::fflush(stdout);
  return 1;
}

std::vector<int> every_rank_but(int world, const std::vector<int>& out) {
  std::vector<int> ranks;
  for (int r = 0; r < world; ++r) {
    if (std::find(out.begin(), out.end(), r) == out.end()) ranks.push_back(r);
  }
  return ranks;
}

// Shrinks `group`, checks the new group is `survivors` (original ranks, ascending) with this
// rank at its place among them, and that its all_reduce sums the survivors' contributions.
int shrink_and_check(weft::ProcessGroup& group, const std::vector<int>& survivors,
                     std::chrono::milliseconds timeout = {}) {
  const int me = group.rank();
  auto started = Clock::now();
  auto smaller = group.shrink(timeout);
  std::printf("SHRUNK %ld rank=%d size=%d\n", ms_since(started), smaller->rank(), smaller->size());
  std::fflush(stdout);
  const int place =
      static_cast<int>(std::find(survivors.begin(), survivors.end(), me) - survivors.begin());
  if (smaller->size() != static_cast<int>(survivors.size()) || smaller->rank() != place) {
    return fail("wrong group: rank " + std::to_string(smaller->rank()) + " of " +
                std::to_string(smaller->size()) + ", expected rank " + std::to_string(place) +
                " of " + std::to_string(survivors.size()));
  }
  for (int round = 100; round < 105; ++round) {
    std::vector<int32_t> data = contribution(me, round);
    smaller->all_reduce(weft::BufferView(data));
    if (data != expected_sum(survivors, round)) {
      return fail("wrong all_reduce on the shrunk group, round " + std::to_string(round));
    }
  }
  // The old group stays aborted.
  try {
    std::vector<int32_t> data = contribution(me, 0);
    group.all_reduce(weft::BufferView(data));
    return fail("the old group still ran an all_reduce after shrink");
  } catch (const weft::Error& error) {
    if (error.code() != weft::ErrorCode::kAborted &&
        error.code() != weft::ErrorCode::kPeerFailure) {
      return fail(std::string("old group: unexpected error ") + error.what());
    }
  }
  std::printf("RESULT ok %zu survivors\n", survivors.size());
  std::fflush(stdout);
  return 0;
}

// all_reduces in a loop, checked each time; the VICTIMS SIGKILL themselves mid-loop. The
// others must get the failure, shrink to the survivors and compute right with them.
int kill_then_shrink() {
  auto group = weft::init_process_group();
  const std::vector<int> victims = env_ranks("VICTIMS");
  const std::vector<int> everyone = every_rank_but(group->size(), {});
  bool victim = std::find(victims.begin(), victims.end(), group->rank()) != victims.end();
  try {
    for (int round = 0; round < 1000; ++round) {
      if (victim && round == kKillAt) {
        std::fflush(nullptr);
        raise(SIGKILL);
      }
      std::vector<int32_t> data = contribution(group->rank(), round);
      group->all_reduce(weft::BufferView(data));
      if (data != expected_sum(everyone, round)) {
        return fail("wrong all_reduce before the kill, round " + std::to_string(round));
      }
    }
    return fail("none: the loop ended without noticing the deaths");
  } catch (const weft::Error& error) {
    std::printf("FAILED %s %s\n", weft::to_string(error.code()), error.what());
  }
  return shrink_and_check(*group, every_rank_but(group->size(), victims));
}

// Nobody died: shrink keeps everyone, in the same order.
int everyone_shrinks() {
  auto group = weft::init_process_group();
  group->barrier();
  return shrink_and_check(*group, every_rank_but(group->size(), {}));
}

// LATE calls shrink only after the others' timeout: they go on without it, and it is told it
// was left out.
int late_member() {
  auto group = weft::init_process_group();
  const int late = env_int("LATE", 1);
  const std::chrono::milliseconds timeout(env_int("SHRINK_MS", 1000));
  group->barrier();
  if (group->rank() != late) {
    return shrink_and_check(*group, every_rank_but(group->size(), {late}), timeout);
  }
  std::this_thread::sleep_for(timeout * 2 + std::chrono::milliseconds(500));
  try {
    group->shrink(timeout);
    return fail("none: the late member got a group");
  } catch (const weft::Error& error) {
    std::printf("RESULT %s %s\n", weft::to_string(error.code()), error.what());
    return error.code() == weft::ErrorCode::kAborted ? 0 : 1;
  }
}

// On rank 0, an all_reduce (which the others do not join yet) and a receive (never sent) block
// on two threads; a third thread aborts the group. Both must end at once with kAborted; the
// others then find the group aborted too.
int abort_from_another_thread() {
  auto group = weft::init_process_group();
  std::vector<int32_t> data = contribution(group->rank(), 0);
  group->all_reduce(weft::BufferView(data));  // the group is set up and connected
  if (group->rank() != 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    try {
      group->all_reduce(weft::BufferView(data));
      return fail("none: the group ran on after rank 0's abort");
    } catch (const weft::Error& error) {
      std::printf("RESULT %s %s\n", weft::to_string(error.code()), error.what());
      return error.code() == weft::ErrorCode::kAborted ? 0 : 1;
    }
  }
  std::string recv_error = "none";
  long recv_ms = -1;
  std::thread receiver([&] {
    std::vector<int32_t> nothing(4);
    auto started = Clock::now();
    try {
      group->recv(weft::BufferView(nothing), 1, 77);
    } catch (const weft::Error& error) {
      recv_error = weft::to_string(error.code());
      recv_ms = ms_since(started);
    }
  });
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    group->abort("stopped from another thread");
  });
  auto started = Clock::now();
  std::string error_text = "none";
  weft::ErrorCode code = weft::ErrorCode::kInternal;
  try {
    group->all_reduce(weft::BufferView(data));
  } catch (const weft::Error& error) {
    code = error.code();
    error_text = error.what();
  }
  long ms = ms_since(started);
  aborter.join();
  receiver.join();
  std::printf("RESULT %s %ld %s | recv %s %ld\n", weft::to_string(code), ms, error_text.c_str(),
              recv_error.c_str(), recv_ms);
  bool released = code == weft::ErrorCode::kAborted && recv_error == "aborted";
  return released ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario = argc > 1 ? argv[1] : "";
  try {
    if (scenario == "kill_then_shrink") return kill_then_shrink();
    if (scenario == "everyone_shrinks") return everyone_shrinks();
    if (scenario == "late_member") return late_member();
    if (scenario == "abort_from_another_thread") return abort_from_another_thread();
  } catch (const std::exception& e) {
    std::printf("UNEXPECTED %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
  return 2;
}
