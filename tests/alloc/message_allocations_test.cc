// Once warm, a message costs no heap allocation: its request and its Work come from recycled
// blocks, a TCP connection's send queue keeps its capacity, and a small collective's scratch
// lives on the stack. Counted over every thread of the process (both ranks, the event loop, the
// progress threads) by this binary's own global operator new, over both paths.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <new>
#include <ostream>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "support/sanitizers.h"
#include "support/thread_ranks.h"
#include "weft/weft.h"

namespace {

std::atomic<bool> counting{false};
std::atomic<long> allocations{0};

void* counted_allocation(std::size_t bytes) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1);
  void* block = std::malloc(bytes == 0 ? 1 : bytes);
  if (!block) throw std::bad_alloc();
  return block;
}

}  // namespace

void* operator new(std::size_t bytes) { return counted_allocation(bytes); }
void* operator new[](std::size_t bytes) { return counted_allocation(bytes); }
void operator delete(void* block) noexcept { std::free(block); }
void operator delete[](void* block) noexcept { std::free(block); }
void operator delete(void* block, std::size_t) noexcept { std::free(block); }
void operator delete[](void* block, std::size_t) noexcept { std::free(block); }

namespace weft {
namespace {

constexpr int kWarmUp = 200;
constexpr int kCounted = 1000;

struct Transport {
  const char* name;
  const char* setting;  // WEFT_TRANSPORT
  friend void PrintTo(const Transport& transport, std::ostream* out) { *out << transport.name; }
};

class MessageAllocations : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    if (testing::kSanitized) GTEST_SKIP() << "a sanitizer's runtime allocates on its own";
    setenv("WEFT_TRANSPORT", GetParam().setting, 1);
  }
  void TearDown() override { unsetenv("WEFT_TRANSPORT"); }

  // Runs `step` kWarmUp times on both ranks, then kCounted times while every operator new of
  // the process is counted; returns the count. Rank 1 waits for rank 0 to stop counting before
  // it leaves, so that nothing after its loop falls in the window.
  long count_over(std::size_t message_bytes, const std::function<void(ProcessGroup&, int)>& step) {
    allocations.store(0);
    std::atomic<bool> counted{false};
    testing::run_ranks_leaving_in_turn(2, [&](ProcessGroup& group) {
      warm_up_early_arrivals(group, message_bytes);
      for (int i = 0; i < kWarmUp; ++i) step(group, i);
      group.barrier();
      if (group.rank() == 0) counting.store(true);
      for (int i = 0; i < kCounted; ++i) step(group, i);
      if (group.rank() == 0) {
        counting.store(false);
        counted.store(true);
      }
      while (!counted.load()) std::this_thread::yield();
    });
    return allocations.load();
  }

  // A message that comes before its receive waits in a pooled buffer, queued in a recycled
  // node: the first ones to do so allocate them. Whether the timed loop's messages ever do
  // depends on timing, so each rank gets two such messages (the most a loop here has in
  // flight) of the loop's size up front. A barrier between the sends and their receives would
  // not make them early: a thread still reading the first may deliver it only after its
  // receive is posted. A marker from the same sender does, since messages from one sender
  // match in the order sent: once the marker is received, the two came before their receives.
  static void warm_up_early_arrivals(ProcessGroup& group, std::size_t bytes) {
    std::vector<uint8_t> first(bytes), second(bytes), marker(1);
    const int peer = 1 - group.rank();
    for (int sender = 0; sender < 2; ++sender) {
      if (group.rank() == sender) {
        group.send(ConstBufferView(first), peer, 1000);
        group.send(ConstBufferView(second), peer, 1001);
        group.send(ConstBufferView(marker), peer, 1002);
      } else {
        group.recv(BufferView(marker), peer, 1002);
        group.recv(BufferView(first), peer, 1000);
        group.recv(BufferView(second), peer, 1001);
      }
    }
  }
};

TEST_P(MessageAllocations, SmallPointToPointMessagesAllocateNothing) {
  std::vector<std::vector<float>> buffers(2, std::vector<float>(2));
  long count = count_over(2 * sizeof(float), [&](ProcessGroup& group, int i) {
    std::vector<float>& buffer = buffers[group.rank()];
    if (group.rank() == 0) {
      buffer.assign(2, static_cast<float>(i));
      group.send(ConstBufferView(buffer), 1, 7);
      group.recv(BufferView(buffer), 1, 7);
      ASSERT_EQ(buffer[0], static_cast<float>(i) + 1.0f);
    } else {
      group.recv(BufferView(buffer), 0, 7);
      ASSERT_EQ(buffer[1], static_cast<float>(i));
      buffer[0] += 1.0f;
      group.send(ConstBufferView(buffer), 0, 7);
    }
  });
  EXPECT_EQ(count, 0) << "over " << kCounted << " round trips";
}

TEST_P(MessageAllocations, LargerPointToPointMessagesAllocateNothing) {
  std::vector<std::vector<uint8_t>> buffers(2, std::vector<uint8_t>(64 << 10));
  long count = count_over(64 << 10, [&](ProcessGroup& group, int i) {
    std::vector<uint8_t>& buffer = buffers[group.rank()];
    if (group.rank() == 0) {
      buffer.front() = static_cast<uint8_t>(i);
      group.send(ConstBufferView(buffer), 1, 3);
      group.recv(BufferView(buffer), 1, 3);
      ASSERT_EQ(buffer.back(), static_cast<uint8_t>(i + 1));
    } else {
      group.recv(BufferView(buffer), 0, 3);
      ASSERT_EQ(buffer.front(), static_cast<uint8_t>(i));
      buffer.back() = static_cast<uint8_t>(i + 1);
      group.send(ConstBufferView(buffer), 0, 3);
    }
  });
  EXPECT_EQ(count, 0) << "over " << kCounted << " round trips of 64 KiB";
}

TEST_P(MessageAllocations, SmallAllReducesAllocateNothing) {
  long count = count_over(2 * sizeof(float), [](ProcessGroup& group, int i) {
    float values[2] = {static_cast<float>(group.rank() + i), 1.0f};
    group.all_reduce(BufferView(std::span<float>(values)), ReduceOp::kSum);
    ASSERT_EQ(values[0], static_cast<float>(1 + 2 * i));
    ASSERT_EQ(values[1], 2.0f);
  });
  EXPECT_EQ(count, 0) << "over " << kCounted << " all_reduces of 8 bytes";
}

INSTANTIATE_TEST_SUITE_P(Paths, MessageAllocations,
                         ::testing::Values(Transport{"tcp", "tcp"}, Transport{"shm", "auto"}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace weft
