#include "measure.h"

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <exception>
#include <memory>
#include <thread>
#include <vector>

#include "reduce/reduce_kernels.h"
#include "weft/weft.h"

namespace weft_model {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kSmallBytes = 8;
constexpr std::size_t kLargeBytes = std::size_t{4} << 20;
constexpr std::size_t kReduceBytes = std::size_t{64} << 20;

double median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

// Half round trips of `bytes`, measured on rank 0 (rank 1 echoes); the first few warm up.
std::vector<double> half_round_trips(weft::ProcessGroup& group, std::size_t bytes, int count) {
  std::vector<float> buffer(bytes / sizeof(float));
  constexpr int kWarmUp = 5;
  std::vector<double> times;
  for (int i = 0; i < kWarmUp + count; ++i) {
    const auto start = Clock::now();
    if (group.rank() == 0) {
      group.send(buffer, 1);
      group.recv(buffer, 1);
    } else {
      group.recv(buffer, 0);
      group.send(buffer, 0);
    }
    const std::chrono::duration<double> took = Clock::now() - start;
    if (i >= kWarmUp) times.push_back(took.count() / 2);
  }
  return times;
}

struct PingPong {
  double small_s = 0;
  double large_s = 0;
};

PingPong ping_pong_over_loopback() {
  setenv("WEFT_TRANSPORT", "tcp", 1);  // the ranks share this host: keep them off shared memory
  auto store = std::make_shared<weft::MemoryStore>();
  PingPong result;
  std::exception_ptr failure;
  auto run = [&](int rank) {
    try {
      weft::InitOptions options;
      options.store = store;
      options.rank = rank;
      options.world_size = 2;
      options.timeout = std::chrono::seconds(60);
      auto group = weft::init_process_group(options);
      const double small = median(half_round_trips(*group, kSmallBytes, 2000));
      const double large = median(half_round_trips(*group, kLargeBytes, 30));
      if (rank == 0) result = {small, large};
      group->barrier();
    } catch (...) {
      if (rank == 0) failure = std::current_exception();
    }
  };
  std::thread peer(run, 1);
  run(0);
  peer.join();
  if (failure) std::rethrow_exception(failure);
  return result;
}

double reduction_seconds_per_byte() {
  const std::size_t count = kReduceBytes / sizeof(float);
  std::vector<float> dst(count, 1.0f);
  std::vector<float> src(count, 2.0f);
  double fastest = 1e9;
  for (int i = 0; i < 5; ++i) {
    const auto start = Clock::now();
    weft::reduce::reduce_into(weft::DType::kFloat32, weft::ReduceOp::kSum, dst.data(), src.data(),
                              count);
    const std::chrono::duration<double> took = Clock::now() - start;
    fastest = std::min(fastest, took.count());
  }
  return fastest / static_cast<double>(kReduceBytes);
}

}  // namespace

weft::coll::NetworkModel measure_here() {
  const PingPong times = ping_pong_over_loopback();
  const double per_byte = std::max(
      0.0, (times.large_s - times.small_s) / static_cast<double>(kLargeBytes - kSmallBytes));
  return weft::coll::NetworkModel{times.small_s, per_byte, reduction_seconds_per_byte()};
}

}  // namespace weft_model
