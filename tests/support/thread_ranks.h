// Runs a body once per rank, each rank a thread of this process with its own World over a
// shared MemoryStore and real sockets (the in-process test tier). A watchdog fails the test
// instead of letting a bug hang CI.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "weft/weft.h"

namespace weft::testing {

struct ThreadRanksOptions {
  std::chrono::milliseconds timeout{20'000};   // the groups' timeout
  std::chrono::milliseconds watchdog{60'000};  // the whole run
  // Each rank's store client (a TcpStore client serves one blocking call at a time, so ranks
  // need one each); unset: one MemoryStore for all.
  std::function<std::shared_ptr<Store>()> make_store;
};

// Each body gets its rank's ProcessGroup. Exceptions are collected and reported per rank.
inline void run_ranks(int world_size, const std::function<void(ProcessGroup&)>& body,
                      ThreadRanksOptions options = {}) {
  auto shared_store = std::make_shared<MemoryStore>();
  std::vector<std::string> failures(world_size);
  std::vector<std::thread> threads;
  std::atomic<int> finished{0};
  for (int rank = 0; rank < world_size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        InitOptions init;
        init.rank = rank;
        init.world_size = world_size;
        init.store = options.make_store ? options.make_store() : shared_store;
        init.timeout = options.timeout;
        auto group = init_process_group(init);
        body(*group);
      } catch (const std::exception& e) {
        failures[rank] = e.what();
      }
      finished.fetch_add(1);
    });
  }
  auto deadline = std::chrono::steady_clock::now() + options.watchdog;
  while (finished.load() < world_size && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (finished.load() < world_size) {
    ADD_FAILURE() << "watchdog: ranks still running after " << options.watchdog.count() << " ms";
    std::fflush(nullptr);
    std::_Exit(3);  // a hung rank thread cannot be joined: fail loudly rather than hang CI
  }
  for (auto& thread : threads) thread.join();
  for (int rank = 0; rank < world_size; ++rank) {
    EXPECT_TRUE(failures[rank].empty()) << "rank " << rank << ": " << failures[rank];
  }
}

// run_ranks, but no rank destroys its group before every rank has finished the body: a member
// that leaves fails the collectives still running on the others (even ones that do not involve
// it), and algorithms run on their own do not end in lockstep (a broadcast root finishes
// first). The latch is arrived at even when the body throws.
//
// NOTE(shutdown-race): then the ranks leave one at a time, 10 ms apart. World::on_peer_failed
// holds strong references to communicators on the transport's thread while it handles a
// leaving peer's goodbye; a group destroyed at that moment is destroyed on that thread, whose
// TcpPath::shutdown joins itself (std::terminate, "Resource deadlock avoided"). Leaving in
// turn keeps goodbyes away from groups being destroyed. Remove once core fixes the race.
inline void run_ranks_leaving_in_turn(int world_size,
                                      const std::function<void(ProcessGroup&)>& body,
                                      ThreadRanksOptions options = {}) {
  std::latch finished(world_size);
  run_ranks(
      world_size,
      [&](ProcessGroup& group) {
        struct Arrive {
          std::latch& latch;
          int rank;
          ~Arrive() {
            latch.arrive_and_wait();
            std::this_thread::sleep_for(std::chrono::milliseconds(10) * rank);
          }
        } arrive{finished, group.rank()};
        body(group);
      },
      options);
}

// Deterministic test data every rank can compute: exact in every dtype.
inline int32_t pattern(int seed, int rank, std::size_t index) {
  return static_cast<int32_t>((seed * 131 + rank * 31 + index * 7) % 113);
}

// `count` elements of pattern(seed, rank, i): what `rank` contributes.
template <typename T>
std::vector<T> pattern_data(int seed, int rank, std::size_t count) {
  std::vector<T> data(count);
  for (std::size_t i = 0; i < count; ++i) data[i] = static_cast<T>(pattern(seed, rank, i));
  return data;
}

}  // namespace weft::testing
