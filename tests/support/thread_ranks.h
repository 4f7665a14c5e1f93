// Runs a body once per rank, each rank a thread of this process with its own World over a
// shared MemoryStore and real sockets (the in-process test tier). A watchdog fails the test
// instead of letting a bug hang CI.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "weft/weft.h"

namespace weft::testing {

struct ThreadRanksOptions {
  std::chrono::milliseconds timeout{20'000};   // the groups' timeout
  std::chrono::milliseconds watchdog{60'000};  // the whole run
};

// Each body gets its rank's ProcessGroup. Exceptions are collected and reported per rank.
inline void run_ranks(int world_size, const std::function<void(ProcessGroup&)>& body,
                      ThreadRanksOptions options = {}) {
  auto store = std::make_shared<MemoryStore>();
  std::vector<std::string> failures(world_size);
  std::vector<std::thread> threads;
  std::atomic<int> finished{0};
  for (int rank = 0; rank < world_size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        InitOptions init;
        init.rank = rank;
        init.world_size = world_size;
        init.store = store;
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

// The error a call throws, or fails the test when it throws none.
template <typename Fn>
Error error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected a weft::Error";
  return Error(ErrorCode::kInternal, "no error was thrown");
}

// Deterministic test data every rank can compute: exact in every dtype.
inline int32_t pattern(int seed, int rank, std::size_t index) {
  return static_cast<int32_t>((seed * 131 + rank * 31 + index * 7) % 113);
}

}  // namespace weft::testing
