#include "transport/shm/slot_store_policy.h"

#include <algorithm>
#include <bit>

namespace weft::transport {

SlotStorePolicy::SlotStorePolicy(std::atomic<uint32_t>* published, bool leader, SlotStores setting)
    : published_(published), leader_(leader), setting_(setting) {}

SlotStorePolicies::SlotStorePolicies(std::atomic<uint32_t>* published, bool leader,
                                     SlotStores setting) {
  by_op_.reserve(kKinds);
  for (int k = 0; k < kKinds; ++k) by_op_.emplace_back(published + k, leader, setting);
}

int SlotStorePolicy::class_of(std::size_t piece_bytes) {
  int log2 = std::bit_width(std::max(piece_bytes, kFromBytes)) - 1;
  return std::min(log2 - std::countr_zero(kFromBytes), kClasses - 1);
}

int64_t SlotStorePolicy::RecentTimes::median(uint32_t last) const {
  const uint32_t n = std::min({count, last, kTrialCalls});
  int64_t sorted[kTrialCalls];
  for (uint32_t i = 0; i < n; ++i) sorted[i] = ns[(count - 1 - i) % kTrialCalls];
  std::nth_element(sorted, sorted + n / 2, sorted + n);
  return sorted[n / 2];
}

int64_t SlotStorePolicy::RecentTimes::shortest() const {
  const uint32_t n = std::min(count, kTrialCalls);
  return n == 0 ? 0 : *std::min_element(ns, ns + n);
}

bool SlotStorePolicy::streams(std::size_t piece_bytes) const {
  if (piece_bytes < kFromBytes) return false;
  switch (setting_) {
    case SlotStores::kOrdinary:
      return false;
    case SlotStores::kStreaming:
      return true;
    case SlotStores::kAdaptive:
      break;
  }
  return (published_->load(std::memory_order_relaxed) >> class_of(piece_bytes)) & 1;
}

void SlotStorePolicy::record(std::size_t piece_bytes, bool streamed, std::size_t filled_bytes,
                             std::chrono::nanoseconds took,
                             std::chrono::steady_clock::time_point now) {
  if (!leader_ || setting_ != SlotStores::kAdaptive || piece_bytes < kFromBytes) return;
  const int size_class = class_of(piece_bytes);
  Learning& learning = learning_[size_class];
  if (streamed != (learning.trial != learning.streaming)) return;  // began before a change
  if (learning.last_trial == std::chrono::steady_clock::time_point{}) learning.last_trial = now;
  if (learning.skip_next) {
    learning.skip_next = false;
    return;
  }
  const auto per_page =
      static_cast<int64_t>(static_cast<double>(took.count()) * 4096.0 /
                           static_cast<double>(std::max<std::size_t>(filled_bytes, 1)));
  learning.recent[streamed ? 1 : 0].add(per_page);
  learning.durations.add(took.count());
  learning.samples = samples_for(learning.durations.shortest());
  const uint32_t length = learning.sampling ? learning.samples : learning.period;
  const bool overdue =
      !learning.trial && (now - learning.last_trial >= learning.retry_after || drifted(learning));
  if (++learning.counted < length && !overdue) return;
  end_phase(learning, size_class, now);
}

void SlotStorePolicy::end_phase(Learning& learning, int size_class,
                                std::chrono::steady_clock::time_point now) {
  const int chosen = learning.streaming ? 1 : 0;
  if (!learning.trial) {
    learning.trial = true;
    learning.sampling = true;
    learning.recent[1 - chosen] = RecentTimes{};
    learning.last_trial = now;
    publish(size_class, !learning.streaming);
  } else {
    learning.trial = false;
    learning.retry_after = std::max<std::chrono::steady_clock::duration>(
        kRetryAfter, kTrialShare * (now - learning.last_trial));
    const RecentTimes& tried = learning.recent[1 - chosen];
    const RecentTimes& kept = learning.recent[chosen];
    const uint32_t n = learning.samples;
    if (!tried.empty() && !kept.empty() &&
        static_cast<double>(tried.median(n)) <
            static_cast<double>(kept.median(n)) * kSwitchMargin) {
      learning.streaming = !learning.streaming;
      learning.period = kFirstPeriod;
      learning.confirmed = tried.median(n);
    } else {
      learning.period = std::min(2 * learning.period, kLongestPeriod);
      learning.confirmed = kept.empty() ? 0 : kept.median(n);
    }
    learning.sampling = false;
    publish(size_class, learning.streaming);
  }
  learning.counted = 0;
  learning.skip_next = true;
}

bool SlotStorePolicy::drifted(const Learning& learning) {
  const RecentTimes& chosen = learning.recent[learning.streaming ? 1 : 0];
  return learning.confirmed > 0 && chosen.count >= learning.samples &&
         static_cast<double>(chosen.median(learning.samples)) >
             static_cast<double>(learning.confirmed) * kDriftFactor;
}

uint32_t SlotStorePolicy::samples_for(int64_t shortest) {
  if (shortest <= 0) return kTrialCalls;
  const int64_t span = std::chrono::nanoseconds(kSampleSpan).count();
  const int64_t calls = (span + shortest - 1) / shortest;
  return static_cast<uint32_t>(std::clamp<int64_t>(calls, kFewestSamples, kTrialCalls));
}

void SlotStorePolicy::publish(int size_class, bool streaming) {
  const uint32_t bit = 1u << size_class;
  if (streaming) {
    published_->fetch_or(bit, std::memory_order_relaxed);
  } else {
    published_->fetch_and(~bit, std::memory_order_relaxed);
  }
}

}  // namespace weft::transport
