// The whole job in miniature: start, talk to the neighbours, report to rank 0.
//
//  1. Every rank joins the job with weft::init_process_group() (env://: RANK, WORLD_SIZE,
//     MASTER_ADDR, MASTER_PORT, as weftrun and torchrun set them).
//  2. Every rank exchanges a message with both of its ring neighbours in one
//     batch_isend_irecv: one message travels to the right (tag 1), one to the left (tag 2).
//     The first exchange also makes the connections; the next kWarmRounds are timed warm.
//  3. Every rank but 0 sends rank 0 a greeting with its host, pid and timings; rank 0
//     receives them from weft::kAnySource, in whatever order they come, and learns each
//     sender from recv's return value.
//  4. Rank 0 prints a summary table and checks that every rank greeted exactly once.
//
// Works for any number of ranks, 1 included (a rank of one is its own neighbour).
//
//   weftrun -n 4 ./hello_ranks
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kRightwardTag = 1;  // a message to my right neighbour (its left one is me)
constexpr int kLeftwardTag = 2;   // a message to my left neighbour
constexpr int kGreetingTag = 3;
constexpr int kWarmRounds = 20;

// What travels around the ring: who sent it, which way, and a value derived from both.
struct RingMessage {
  int64_t sender;
  int64_t direction;  // +1 rightward, -1 leftward
  int64_t check;      // sender * 1000 + direction * round
};

// What every rank tells rank 0. All ranks run this same program on the same kind of machine,
// so the struct is sent as plain bytes.
struct Greeting {
  int32_t rank;
  int32_t pid;
  double init_ms;        // init_process_group()
  double first_ring_ms;  // the first ring exchange, connections included
  double warm_ring_us;   // one warm ring exchange, averaged
  char host[64];
  char text[96];
};

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

[[gnu::format(printf, 1, 2)]] void say(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::printf("\n");
  std::fflush(stdout);
}

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

// One exchange with both neighbours; checks what came back.
void ring_exchange(weft::ProcessGroup& group, int64_t round) {
  const int rank = group.rank();
  const int size = group.size();
  const int right = (rank + 1) % size;
  const int left = (rank + size - 1) % size;

  RingMessage to_right{rank, +1, rank * 1000 + round};
  RingMessage to_left{rank, -1, rank * 1000 - round};
  RingMessage from_left{-1, 0, 0};
  RingMessage from_right{-1, 0, 0};
  // weft counts elements: a RingMessage is 3 int64 values.
  auto view = [](RingMessage& message) {
    return weft::BufferView(&message, 3, weft::DType::kInt64);
  };

  auto works = group.batch_isend_irecv({
      weft::P2POp::recv(view(from_left), left, kRightwardTag),
      weft::P2POp::recv(view(from_right), right, kLeftwardTag),
      weft::P2POp::send(view(to_right), right, kRightwardTag),
      weft::P2POp::send(view(to_left), left, kLeftwardTag),
  });
  for (auto& work : works) work->wait();

  auto expect = [&](const RingMessage& got, int sender, int64_t direction, const char* side) {
    int64_t check = sender * 1000 + direction * round;
    if (got.sender != sender || got.direction != direction || got.check != check) {
      fail("round " + std::to_string(round) + ": the message from my " + side + " neighbour " +
           std::to_string(sender) + " was {" + std::to_string(got.sender) + ", " +
           std::to_string(got.direction) + ", " + std::to_string(got.check) + "}, expected {" +
           std::to_string(sender) + ", " + std::to_string(direction) + ", " +
           std::to_string(check) + "}");
    }
  };
  expect(from_left, left, +1, "left");
  expect(from_right, right, -1, "right");
  if (works[0]->source_rank() != left || works[1]->source_rank() != right) {
    fail("a ring receive reports the wrong source rank");
  }
}

Greeting make_greeting(int rank, double init_ms, double first_ring_ms, double warm_ring_us) {
  Greeting greeting{};
  greeting.rank = rank;
  greeting.pid = static_cast<int32_t>(getpid());
  greeting.init_ms = init_ms;
  greeting.first_ring_ms = first_ring_ms;
  greeting.warm_ring_us = warm_ring_us;
  if (gethostname(greeting.host, sizeof greeting.host - 1) != 0) {
    std::strncpy(greeting.host, "?", sizeof greeting.host - 1);
  }
  std::snprintf(greeting.text, sizeof greeting.text, "Hello from rank %d on %s!", rank,
                greeting.host);
  return greeting;
}

weft::BufferView as_bytes(Greeting& greeting) {
  return weft::BufferView(&greeting, sizeof greeting, weft::DType::kUInt8);
}

void print_summary(const std::vector<Greeting>& by_rank, const std::vector<int>& arrival_order,
                   double gather_ms, double total_ms) {
  const int size = static_cast<int>(by_rank.size());
  std::printf("\n");
  say("=== hello_ranks: %d rank%s ===", size, size == 1 ? "" : "s");
  say("%-5s %-20s %-8s %10s %14s %14s", "rank", "host", "pid", "init ms", "1st ring ms",
      "warm ring us");
  for (const Greeting& g : by_rank) {
    say("%-5d %-20.20s %-8d %10.2f %14.3f %14.1f", g.rank, g.host, g.pid, g.init_ms,
        g.first_ring_ms, g.warm_ring_us);
  }
  std::string order;
  for (int rank : arrival_order) order += (order.empty() ? "" : " ") + std::to_string(rank);
  say("greetings arrived from: %s", order.empty() ? "(nobody: rank 0 is alone)" : order.c_str());
  double slowest_init = 0;
  for (const Greeting& g : by_rank) slowest_init = std::max(slowest_init, g.init_ms);
  say("slowest init: %.2f ms, gather at rank 0: %.3f ms, rank 0 total: %.2f ms", slowest_init,
      gather_ms, total_ms);
}

}  // namespace

int main() {
  int rank = -1;
  try {
    const auto start = Clock::now();
    std::shared_ptr<weft::ProcessGroup> group = weft::init_process_group();
    const double init_ms = ms_since(start);
    rank = group->rank();
    const int size = group->size();
    say("Rank %d of %d has joined (init %.2f ms)", rank, size, init_ms);

    // Neighbours.
    auto ring_start = Clock::now();
    ring_exchange(*group, 0);
    const double first_ring_ms = ms_since(ring_start);
    ring_start = Clock::now();
    for (int round = 1; round <= kWarmRounds; ++round) ring_exchange(*group, round);
    const double warm_ring_us = ms_since(ring_start) * 1000.0 / kWarmRounds;
    say("Rank %d exchanged with its neighbours %d and %d (first %.3f ms, then %.1f us each)", rank,
        (rank + size - 1) % size, (rank + 1) % size, first_ring_ms, warm_ring_us);

    // Greetings.
    Greeting mine = make_greeting(rank, init_ms, first_ring_ms, warm_ring_us);
    if (rank != 0) {
      group->send(as_bytes(mine), 0, kGreetingTag);
      return 0;
    }

    std::vector<Greeting> by_rank(size);
    std::vector<bool> greeted(size, false);
    std::vector<int> arrival_order;
    by_rank[0] = mine;
    greeted[0] = true;
    const auto gather_start = Clock::now();
    for (int i = 1; i < size; ++i) {
      Greeting greeting{};
      const int source = group->recv(as_bytes(greeting), weft::kAnySource, kGreetingTag);
      if (source < 1 || source >= size) fail("recv reports source rank " + std::to_string(source));
      if (greeted[source]) fail("rank " + std::to_string(source) + " greeted twice");
      if (greeting.rank != source) {
        fail("the greeting from rank " + std::to_string(source) + " claims to be from rank " +
             std::to_string(greeting.rank));
      }
      greeting.text[sizeof greeting.text - 1] = '\0';
      greeting.host[sizeof greeting.host - 1] = '\0';
      const std::string expected = "Hello from rank " + std::to_string(source) + " ";
      if (std::strncmp(greeting.text, expected.c_str(), expected.size()) != 0) {
        fail("unexpected greeting from rank " + std::to_string(source) + ": '" + greeting.text +
             "'");
      }
      say("Rank 0 got: %s", greeting.text);
      greeted[source] = true;
      by_rank[source] = greeting;
      arrival_order.push_back(source);
    }
    const double gather_ms = ms_since(gather_start);
    print_summary(by_rank, arrival_order, gather_ms, ms_since(start));
    say("hello_ranks: OK, all %d rank%s greeted", size, size == 1 ? "" : "s");
    return 0;
  } catch (const std::exception& e) {
    if (rank >= 0) {
      std::fprintf(stderr, "Rank %d: FAILED: %s\n", rank, e.what());
    } else {
      std::fprintf(stderr, "%s: FAILED to join the job: %s\n", "hello_ranks", e.what());
    }
    return 1;
  }
}
