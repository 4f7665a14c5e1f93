#include "timed_loop.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <vector>

namespace weft_bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxBatches = 5;
constexpr std::size_t kMaxInFlight = 64;
constexpr double kWarmupSeconds = 0.05;
constexpr long kMaxWarmupOps = 5;

Timing summarize(const std::vector<double>& batch_seconds, long per_batch) {
  Timing t;
  t.batches = static_cast<int>(batch_seconds.size());
  t.iters = per_batch * t.batches;
  double total = 0;
  std::vector<double> means;
  for (double s : batch_seconds) {
    total += s;
    means.push_back(s / static_cast<double>(per_batch));
  }
  std::sort(means.begin(), means.end());
  const std::size_t m = means.size();
  const double median = m % 2 ? means[m / 2] : 0.5 * (means[m / 2 - 1] + means[m / 2]);
  t.time_us = total / static_cast<double>(t.iters) * 1e6;
  t.med_us = median * 1e6;
  t.min_us = means.front() * 1e6;
  t.max_us = means.back() * 1e6;
  return t;
}

}  // namespace

double TimedLoop::run_ops(long k) {
  const auto start = Clock::now();
  if (!options_.async) {
    for (long j = 0; j < k; ++j) launcher_();
  } else if (options_.blocking) {
    for (long j = 0; j < k; ++j) launcher_()->wait();
  } else {
    std::deque<std::shared_ptr<weft::Work>> in_flight;
    for (long j = 0; j < k; ++j) {
      in_flight.push_back(launcher_());
      if (in_flight.size() > kMaxInFlight) {
        in_flight.front()->wait();
        in_flight.pop_front();
      }
    }
    for (auto& w : in_flight) w->wait();
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double TimedLoop::max_seconds(long k) { return control_.max_over_ranks(run_ops(k)); }

Timing TimedLoop::run() { return options_.adaptive() ? run_adaptive() : run_fixed(); }

Timing TimedLoop::run_fixed() {
  if (options_.warmup_iters > 0) run_ops(options_.warmup_iters);
  group_.barrier();
  const long n = options_.iters;
  return summarize({max_seconds(n)}, n);
}

Timing TimedLoop::run_adaptive() {
  const double target = options_.target_seconds;
  const double probe = max_seconds(1);
  long warm = probe > 0 ? static_cast<long>(kWarmupSeconds / probe) : kMaxWarmupOps;
  warm = std::clamp(warm, 1L, kMaxWarmupOps);
  const double per_op = max_seconds(warm) / static_cast<double>(warm);

  long iters = per_op > 0 ? static_cast<long>(target / per_op) : options_.max_iters;
  iters = std::clamp(iters, options_.min_iters, options_.max_iters);
  const long batches = std::min<long>(iters, kMaxBatches);
  const long per_batch = (iters + batches - 1) / batches;

  std::vector<double> batch_seconds;
  double spent = 0;
  for (long b = 0; b < batches; ++b) {
    group_.barrier();
    batch_seconds.push_back(max_seconds(per_batch));
    spent += batch_seconds.back();
    // Every rank sees the same maxima, so every rank stops after the same batch.
    if (spent > 2 * target &&
        static_cast<long>(batch_seconds.size()) * per_batch >= options_.min_iters) {
      break;
    }
  }
  return summarize(batch_seconds, per_batch);
}

}  // namespace weft_bench
