// One rank of a multi-process failure scenario (tests/multiproc/failure_test.cc starts it).
// Usage: weft_test_rank SCENARIO, with RANK, WORLD_SIZE, WEFT_STORE_ADDR or MASTER_* set.
// Prints "RESULT <code> <elapsed ms> <message>" for the error the scenario expects, exits 0
// when the expected error came, 1 otherwise.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "hierarchical_checks.h"
#include "weft/weft.h"

namespace {

using Clock = std::chrono::steady_clock;

int report(const weft::Error& error, Clock::time_point since, weft::ErrorCode expected) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count();
  std::printf("RESULT %s %lld %s\n", weft::to_string(error.code()), static_cast<long long>(ms),
              error.what());
  std::fflush(stdout);
  return error.code() == expected ? 0 : 1;
}

int no_error() {
  std::printf("RESULT none\n");
  return 1;
}

// Rank 2 says hello to everyone, then dies; the others wait for a second message from it.
int peer_dies_during_receive(bool connect_first) {
  auto group = weft::init_process_group();
  std::vector<int32_t> data(16);
  const int victim = group->size() - 1;
  if (group->rank() == victim) {
    if (connect_first) {
      for (int peer = 0; peer < victim; ++peer) group->send(data, peer, 1);
    }
    std::fflush(nullptr);
    raise(SIGKILL);
  }
  if (connect_first) group->recv(data, victim, 1);
  auto started = Clock::now();
  try {
    group->recv(data, victim, 2);
  } catch (const weft::Error& e) {
    return report(e, started, weft::ErrorCode::kPeerFailure);
  }
  return no_error();
}

// Ranks wait on a live neighbour in a ring exchange while another rank dies: the news of the
// death reaches them through the failure flood only if they are connected to someone who saw
// it; the test checks every rank's error names the dead rank.
int peer_dies_during_ring(void) {
  auto group = weft::init_process_group();
  std::vector<int32_t> data(4), received(4);
  int right = (group->rank() + 1) % group->size();
  int left = (group->rank() + group->size() - 1) % group->size();
  // Build the ring's connections. Two buffers: the receive may land while the send still reads.
  auto works = group->batch_isend_irecv({weft::P2POp::send(weft::ConstBufferView(data), right),
                                         weft::P2POp::recv(weft::BufferView(received), left)});
  for (auto& work : works) work->wait();
  if (group->rank() == 1) raise(SIGKILL);
  auto started = Clock::now();
  try {
    group->recv(data, left, 3);  // rank 2 waits on the dead rank 1, rank 0 on rank 3, ...
  } catch (const weft::Error& e) {
    return report(e, started, weft::ErrorCode::kPeerFailure);
  }
  return no_error();
}

int stuck_peer() {
  auto group = weft::init_process_group();
  std::vector<float> data(8);
  if (group->rank() == 1) {
    group->send(data, 0, 1);
    raise(SIGSTOP);  // the test kills us later
    return 0;
  }
  group->recv(data, 1, 1);
  auto started = Clock::now();
  try {
    group->recv(data, 1, 2);
  } catch (const weft::Error& e) {
    return report(e, started, weft::ErrorCode::kTimeout);
  }
  return no_error();
}

// Started with different WEFT_JOB_TOKENs against a store that has rank 0's: the store refuses
// rank 1 at once (unauthorized); rank 0 waits for it in vain (a timeout naming it).
int wrong_token() {
  auto started = Clock::now();
  try {
    auto group = weft::init_process_group();
    std::vector<float> data(8);
    if (group->rank() == 0)
      group->send(data, 1);
    else
      group->recv(data, 0);
  } catch (const weft::Error& e) {
    bool rank0 = std::getenv("RANK") != nullptr && std::string(std::getenv("RANK")) == "0";
    return report(e, started, rank0 ? weft::ErrorCode::kTimeout : weft::ErrorCode::kUnauthorized);
  }
  return no_error();
}

// Ranks call different collectives (or the same with different counts) at the same point.
int mismatched_collectives(bool different_counts) {
  auto group = weft::init_process_group();
  int rank = group->rank();
  std::vector<float> data(rank == 0 && different_counts ? 4 : 8, 1.0f);
  auto started = Clock::now();
  try {
    if (different_counts || rank != 1)
      group->all_reduce(data);
    else
      group->reduce(data, 0);
    // A rank whose part only sends (a reduce leaf) finishes before anyone can object; the
    // group's next collective reports the mismatch the others found.
    group->barrier();
  } catch (const weft::Error& e) {
    int status = report(e, started,
                        e.code() == weft::ErrorCode::kMismatch ? weft::ErrorCode::kMismatch
                                                               : weft::ErrorCode::kAborted);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return status;
  }
  return no_error();
}

// Ranks on hosts a, b, a, b (WEFT_HOST_ID) call a hierarchical all_to_all whose split sizes
// disagree between ranks 0 and 1 and between ranks 0 and 3, while the hosts' totals agree: rank
// 0 sends ranks 1 and 3 one and two elements, they expect two and one.
int mismatched_splits_across_hosts() {
  auto group = weft::init_process_group();
  const int me = group->rank(), world = group->size();
  std::vector<std::size_t> sends(world, 1), receives(world, 1);
  if (me == 0) sends[3] = 2;
  if (me == 1) receives[0] = 2;
  std::vector<int32_t> input(world + (me == 0 ? 1 : 0), me);
  std::vector<int32_t> output(world + (me == 1 ? 1 : 0), -1);
  auto started = Clock::now();
  try {
    group->all_to_all(weft::ConstBufferView(input), weft::BufferView(output), sends, receives);
    group->barrier();  // the ranks that saw nothing wrong learn it here
  } catch (const weft::Error& e) {
    int status = report(e, started,
                        e.code() == weft::ErrorCode::kMismatch ? weft::ErrorCode::kMismatch
                                                               : weft::ErrorCode::kAborted);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return status;
  }
  return no_error();
}

// Same-host ranks run a collective through shared memory (no socket between them), then the
// last rank dies: the others, waiting in the next collective, must name it.
int peer_dies_during_shared_memory_collective() {
  auto group = weft::init_process_group();
  std::vector<float> data(1024, 1.0f);
  group->all_reduce(data);  // maps the window; the ranks share no TCP connection
  if (data[0] != static_cast<float>(group->size())) return 1;
  if (group->rank() == group->size() - 1) {
    std::fflush(nullptr);
    raise(SIGKILL);
  }
  auto started = Clock::now();
  try {
    group->all_reduce(data);
  } catch (const weft::Error& e) {
    return report(e, started, weft::ErrorCode::kPeerFailure);
  }
  return no_error();
}

// The last rank roots small broadcasts (eager rounds: it never waits for the readers) and dies
// right after ten of them: the readers still get all ten, then fail naming it.
int root_dies_after_small_broadcasts() {
  auto group = weft::init_process_group();
  std::vector<float> data(2, 0.0f);
  group->all_reduce(data);  // maps the window
  const int root = group->size() - 1;
  for (int call = 0; call < 10; ++call) {
    if (group->rank() == root) data = {static_cast<float>(call), 1.0f};
    group->broadcast(data, root);
    if (data[0] != static_cast<float>(call) || data[1] != 1.0f) return 1;
  }
  if (group->rank() == root) {
    std::fflush(nullptr);
    raise(SIGKILL);
  }
  auto started = Clock::now();
  try {
    group->broadcast(data, root);
  } catch (const weft::Error& e) {
    return report(e, started, weft::ErrorCode::kPeerFailure);
  }
  return no_error();
}

// Rank 1 stops (SIGSTOP) before a shared-memory collective: rank 0 times out naming it.
int stuck_peer_in_shared_memory_collective() {
  auto group = weft::init_process_group();
  std::vector<float> data(16, 1.0f);
  group->all_reduce(data);
  if (group->rank() == 1) {
    raise(SIGSTOP);  // the test kills us later
    return 0;
  }
  auto started = Clock::now();
  try {
    group->all_reduce(data);
  } catch (const weft::Error& e) {
    return report(e, started, weft::ErrorCode::kTimeout);
  }
  return no_error();
}

// Rank 1 stops (SIGSTOP) before the group's third collective, an all_reduce (#2); the others
// time out in it, or hear that a member did. Either error must say which rank had not reached
// which op (the test checks the text).
int stuck_rank_before_all_reduce() {
  auto group = weft::init_process_group();
  std::vector<float> data(8, 1.0f);
  group->all_reduce(data);    // #0
  group->broadcast(data, 0);  // #1
  if (group->rank() == 1) {
    raise(SIGSTOP);  // the test kills us later
    return 0;
  }
  auto started = Clock::now();
  try {
    group->all_reduce(data);  // #2
  } catch (const weft::Error& e) {
    return report(e, started,
                  e.code() == weft::ErrorCode::kAborted ? e.code() : weft::ErrorCode::kTimeout);
  }
  return no_error();
}

// Rank 1 stops before a new group's first collective, which sets up the group's shared memory
// (same-host ranks): the others time out in that setup and must name rank 1, not a store key.
int stuck_rank_at_group_setup() {
  auto group = weft::init_process_group();
  auto everyone = group->new_group({0, 1, 2});
  if (group->rank() == 1) {
    raise(SIGSTOP);  // the test kills us later
    return 0;
  }
  std::vector<float> data(8, 1.0f);
  auto started = Clock::now();
  try {
    everyone->all_reduce(data);  // the group's #0
  } catch (const weft::Error& e) {
    return report(e, started,
                  e.code() == weft::ErrorCode::kAborted ? e.code() : weft::ErrorCode::kTimeout);
  }
  return no_error();
}

// The collectives checked in hierarchical_checks.h, in turn; what was wrong, or "".
std::string check_remaining_collectives(weft::ProcessGroup& group) {
  using namespace weft::testing;
  for (auto check : {check_reduce_scatter_every_dtype_and_op, check_uneven_reduce_scatter,
                     check_all_to_all, check_gather_and_scatter, check_barrier}) {
    if (std::string wrong = check(group); !wrong.empty()) return wrong;
  }
  return "";
}

// Ranks on "hosts" given by WEFT_HOST_ID run the hierarchical collectives (shared memory
// within a host, TCP between hosts) at several sizes and roots; every result is checked
// against a plain loop. Prints "RESULT ok" when all match.
int hierarchical_collectives() {
  auto group = weft::init_process_group();
  const int me = group->rank(), world = group->size();
  auto value = [](int rank, std::size_t i) { return static_cast<float>((rank + 1) * (i % 251)); };
  auto total = [&](std::size_t i) {
    return static_cast<float>(world * (world + 1) / 2 * (i % 251));
  };
  auto fail = [&](const std::string& what) {
    std::printf("RESULT wrong %s\n", what.c_str());
    return 1;
  };
  for (std::size_t count :
       {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{300'001}}) {
    std::vector<float> data(count);
    for (std::size_t i = 0; i < count; ++i) data[i] = value(me, i);
    group->all_reduce(data);
    for (std::size_t i = 0; i < count; ++i) {
      if (data[i] != total(i)) return fail("all_reduce count " + std::to_string(count));
    }
    for (int root = 0; root < world; ++root) {
      std::vector<float> mine(count);
      for (std::size_t i = 0; i < count; ++i) mine[i] = value(me, i);
      group->reduce(mine, root);
      for (std::size_t i = 0; i < count; ++i) {
        float want = me == root ? total(i) : value(me, i);
        if (mine[i] != want) return fail("reduce root " + std::to_string(root));
      }
      std::vector<float> sent(count);
      for (std::size_t i = 0; i < count; ++i) sent[i] = me == root ? value(root, i) : -1.0f;
      group->broadcast(sent, root);
      for (std::size_t i = 0; i < count; ++i) {
        if (sent[i] != value(root, i)) return fail("broadcast root " + std::to_string(root));
      }
    }
    std::vector<float> block(count), all(count * world);
    for (std::size_t i = 0; i < count; ++i) block[i] = value(me, i);
    group->all_gather(weft::ConstBufferView(block), weft::BufferView(all));
    for (int r = 0; r < world; ++r) {
      for (std::size_t i = 0; i < count; ++i) {
        if (all[r * count + i] != value(r, i)) return fail("all_gather");
      }
    }
  }
  // Uneven all_gather: rank r contributes r + 1 elements.
  std::vector<weft::BufferView> outputs;
  std::vector<std::vector<float>> storage(world);
  for (int r = 0; r < world; ++r) {
    storage[r].assign(r + 1, -1.0f);
    outputs.emplace_back(storage[r]);
  }
  std::vector<float> mine(me + 1, static_cast<float>(me));
  group->all_gather(weft::ConstBufferView(mine), outputs);
  for (int r = 0; r < world; ++r) {
    for (float x : storage[r]) {
      if (x != static_cast<float>(r)) return fail("uneven all_gather");
    }
  }
  if (std::string wrong = check_remaining_collectives(*group); !wrong.empty()) return fail(wrong);
  // A subgroup of all but rank 0, which spans hosts too (with neighbours where the world has
  // them beyond rank 0's place).
  if (world >= 3) {
    std::vector<int> all_but_first(world - 1);
    for (int r = 1; r < world; ++r) all_but_first[r - 1] = r;
    auto subgroup = group->new_group(all_but_first);
    if (subgroup) {
      if (std::string wrong = check_remaining_collectives(*subgroup); !wrong.empty()) {
        return fail("in the subgroup: " + wrong);
      }
    }
    group->barrier();
  }
  std::printf("RESULT ok\n");
  std::fflush(stdout);
  return 0;
}

// Rank 1 takes a small message from rank 0, then dies while rank 0 sends it a large one (a
// single-copy offer, or chunks that overflow the ring): rank 0's send fails naming rank 1.
int receiver_dies_during_large_send() {
  auto group = weft::init_process_group();
  std::vector<int32_t> hello(4, 7);
  if (group->rank() == 1) {
    group->recv(hello, 0, 1);
    std::fflush(nullptr);
    raise(SIGKILL);
  }
  group->send(hello, 1, 1);
  std::vector<int32_t> large(2 << 20, 3);
  auto started = Clock::now();
  try {
    group->send(large, 1, 2);
  } catch (const weft::Error& e) {
    return report(e, started, weft::ErrorCode::kPeerFailure);
  }
  return no_error();
}

// Rank 1 sends rank 0 a small and a chunked message, then dies; rank 0 receives only later:
// both messages arrive whole, and only the next receive fails naming rank 1. With POSTED_FIRST
// set, rank 0 posts both receives before rank 1 sends, and waits for them after the death.
int sender_dies_after_sending() {
  auto group = weft::init_process_group();
  std::vector<int32_t> small(4), chunked(30'000);
  if (std::getenv("POSTED_FIRST")) {
    // The receives are posted before the messages come and the sender dies.
    std::vector<int32_t> go(1);
    if (group->rank() == 0) {
      auto a = group->irecv(small, 1, 1);
      auto b = group->irecv(chunked, 1, 2);
      group->send(go, 1, 9);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      a->wait();
      b->wait();
      std::printf("RESULT ok %d %d\n", small[3], chunked[1008]);
      return 0;
    }
    group->recv(go, 0, 9);
  }
  if (group->rank() == 1) {
    for (std::size_t i = 0; i < small.size(); ++i) small[i] = static_cast<int32_t>(i + 1);
    for (std::size_t i = 0; i < chunked.size(); ++i) chunked[i] = static_cast<int32_t>(i % 1009);
    group->send(small, 0, 1);
    group->send(chunked, 0, 2);
    std::fflush(nullptr);
    raise(SIGKILL);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  group->recv(small, 1, 1);
  group->recv(chunked, 1, 2);
  if (std::getenv("POSTED_FIRST")) return 0;
  for (std::size_t i = 0; i < small.size(); ++i) {
    if (small[i] != static_cast<int32_t>(i + 1)) return std::printf("RESULT wrong small\n"), 1;
  }
  for (std::size_t i = 0; i < chunked.size(); ++i) {
    if (chunked[i] != static_cast<int32_t>(i % 1009))
      return std::printf("RESULT wrong chunked\n"), 1;
  }
  auto started = Clock::now();
  try {
    group->recv(small, 1, 3);
  } catch (const weft::Error& e) {
    return report(e, started, weft::ErrorCode::kPeerFailure);
  }
  return no_error();
}

// Two ranks of one host exchange messages of every kind over shared memory and check them;
// the test reads from the log which path was chosen.
int same_host_exchange() {
  auto group = weft::init_process_group();
  int other = 1 - group->rank();
  for (std::size_t count : {std::size_t{1}, std::size_t{4096}, std::size_t{1} << 20}) {
    std::vector<int32_t> mine(count), theirs(count, -1), expected(count);
    for (std::size_t i = 0; i < count; ++i) {
      mine[i] = static_cast<int32_t>(group->rank() * 1000 + i % 997);
      expected[i] = static_cast<int32_t>(other * 1000 + i % 997);
    }
    auto sent = group->isend(mine, other, 0);
    group->recv(theirs, other, 0);
    sent->wait();
    if (theirs != expected) {
      std::printf("RESULT wrong data at %zu elements\n", count);
      return 1;
    }
  }
  std::printf("RESULT ok\n");
  return 0;
}

// A blocking store call while the store server goes away.
int store_dies() {
  const char* address = std::getenv("WEFT_STORE_ADDR");
  std::string text = address ? address : "";
  auto colon = text.rfind(':');
  weft::TcpStore store(text.substr(0, colon), std::stoi(text.substr(colon + 1)),
                       std::chrono::milliseconds(5000));
  store.set("ready", weft::to_bytes("1"));
  store.set_timeout(std::chrono::milliseconds(20000));
  auto started = Clock::now();
  try {
    store.get("never-set");
  } catch (const weft::Error& e) {
    return report(e, started, weft::ErrorCode::kPeerFailure);
  }
  return no_error();
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario = argc > 1 ? argv[1] : "";
  try {
    if (scenario == "peer_dies_during_receive") return peer_dies_during_receive(true);
    if (scenario == "peer_dies_before_connecting") return peer_dies_during_receive(false);
    if (scenario == "peer_dies_during_ring") return peer_dies_during_ring();
    if (scenario == "stuck_peer") return stuck_peer();
    if (scenario == "peer_dies_during_shm_collective") {
      return peer_dies_during_shared_memory_collective();
    }
    if (scenario == "root_dies_after_small_broadcasts") return root_dies_after_small_broadcasts();
    if (scenario == "stuck_peer_in_shm_collective") return stuck_peer_in_shared_memory_collective();
    if (scenario == "hierarchical_collectives") return hierarchical_collectives();
    if (scenario == "stuck_rank_before_all_reduce") return stuck_rank_before_all_reduce();
    if (scenario == "stuck_rank_at_group_setup") return stuck_rank_at_group_setup();
    if (scenario == "wrong_token") return wrong_token();
    if (scenario == "store_dies") return store_dies();
    if (scenario == "receiver_dies_during_large_send") return receiver_dies_during_large_send();
    if (scenario == "same_host_exchange") return same_host_exchange();
    if (scenario == "sender_dies_after_sending") return sender_dies_after_sending();
    if (scenario == "mismatched_ops") return mismatched_collectives(false);
    if (scenario == "mismatched_counts") return mismatched_collectives(true);
    if (scenario == "mismatched_splits_across_hosts") return mismatched_splits_across_hosts();
  } catch (const std::exception& e) {
    std::printf("UNEXPECTED %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
  return 2;
}
